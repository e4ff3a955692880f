/**
 * Store types of who may do what: users, their tokens, their blocks (a claim hands out a token),
 * browser sessions, OAuth applications and codes, and server keys. Apart from types.ts so that each
 * group of repositories reads on its own; types.ts re-exports them with the Store they make up.
 */

export type TokenKind = "user" | "oauth" | "block" | "vblock";

export interface UserRow {
  id: number;
  name: string;
  password_hash: string | null;
  created: number;
}

export interface TokenRow {
  /** sha256 hex of the token; the token itself is never stored. */
  hash: string;
  kind: TokenKind;
  user_id: number;
  node_id: string | null;
  client_id: string | null;
  created: number;
}

export interface BlockRow {
  node_id: string;
  user_id: number;
  short_name: string;
  date_created: number;
  last_active: number;
  /** Claimed but the token not yet delivered to the block: deliver on activation until this time. */
  token_pending_until: number | null;
}

export interface UsersRepo {
  create(name: string, passwordHash: string | null, now: number): Promise<UserRow>;
  byName(name: string): Promise<UserRow | null>;
  byId(id: number): Promise<UserRow | null>;
  count(): Promise<number>;
  setPassword(id: number, passwordHash: string): Promise<void>;
}

/** Which tokens a revocation matches: every given field. */
export type TokenMatch = Partial<Pick<TokenRow, "user_id" | "kind" | "node_id" | "client_id" | "hash">>;

export interface TokensRepo {
  put(row: TokenRow): Promise<void>;
  /** Always reads the store: the read cache is the auth service's (services/auth.ts). */
  find(hash: string): Promise<TokenRow | null>;
  /** Deletes the tokens matching all fields of `match` and stores `row`, in one transaction; returns the hashes deleted. */
  replace(match: TokenMatch, row: TokenRow): Promise<string[]>;
  /** Deletes every token matching all given fields; returns the hashes deleted. */
  revoke(match: TokenMatch): Promise<string[]>;
  list(match: Partial<Pick<TokenRow, "user_id" | "kind" | "node_id" | "client_id">>): Promise<TokenRow[]>;
  /**
   * The hashes of tokens deleted after position `after` (null: none, only the current position),
   * by any process on the store, and the position to ask from next time. Stores whose instances
   * hear of revocations otherwise (PostgreSQL: the Bus) may leave it out.
   */
  revokedSince?(after: number | null): Promise<{ last: number; hashes: string[] }>;
}

export interface SessionRow {
  /** sha256 hex of the session id; the id itself lives only in the browser's cookie. */
  hash: string;
  user_id: number;
  created: number;
  expires: number;
}

export interface OAuthAppRow {
  client_id: string;
  /** The user who registered the application. */
  user_id: number;
  name: string;
  redirect_uri: string;
  /** sha256 hex of the client secret. */
  secret_hash: string;
  created: number;
}

export interface OAuthCodeRow {
  /** sha256 hex of the authorization code. */
  hash: string;
  client_id: string;
  user_id: number;
  redirect_uri: string;
  expires: number;
  used: boolean;
  /** Hash of the access token the code was exchanged for (revoked when the code is replayed). */
  token_hash: string | null;
}

export interface SessionsRepo {
  put(row: SessionRow): Promise<void>;
  find(hash: string): Promise<SessionRow | null>;
  remove(hash: string): Promise<void>;
  /** Deletes sessions that expired before `now`; returns how many. */
  prune(now: number): Promise<number>;
}

export interface OAuthAppsRepo {
  put(row: OAuthAppRow): Promise<void>;
  get(clientId: string): Promise<OAuthAppRow | null>;
  list(userId: number): Promise<OAuthAppRow[]>;
  /** Removes the application with its codes (not its tokens: see TokensRepo.revoke). */
  remove(clientId: string): Promise<boolean>;
}

export interface OAuthCodesRepo {
  put(row: Omit<OAuthCodeRow, "used" | "token_hash">): Promise<void>;
  /**
   * Marks an unused code used and returns it; returns `{replayed}` with the row when it had been
   * used already, and null when it is unknown.
   */
  consume(hash: string): Promise<{ row: OAuthCodeRow; replayed: boolean } | null>;
  setToken(hash: string, tokenHash: string): Promise<void>;
  prune(before: number): Promise<number>;
}

export interface KeysRepo {
  /** The named server key, created from `make()` on first use. */
  getOrCreate(name: string, make: () => string, now: number): Promise<string>;
}

export interface BlocksRepo {
  get(nodeId: string): Promise<BlockRow | null>;
  list(userId: number): Promise<BlockRow[]>;
  /** Creates or re-claims the block for the user. */
  claim(nodeId: string, userId: number, now: number, pendingUntil: number | null): Promise<BlockRow>;
  /**
   * Claims the block for the user with no token pending, replacing its block token with `token`, in
   * one transaction; returns the block and the hashes of the tokens replaced.
   */
  claimWithToken(nodeId: string, userId: number, now: number, token: TokenRow): Promise<{ block: BlockRow; revoked: string[] }>;
  setPending(nodeId: string, pendingUntil: number | null): Promise<void>;
  /**
   * Clears the block's pending token if it is still pending at `now` and returns the block; null
   * when there is none (one statement: of two instances delivering, only one issues the token).
   */
  takePending(nodeId: string, now: number): Promise<BlockRow | null>;
  /** Records that a block waits for activation until `until` (seen by every instance). */
  markAwaiting(nodeId: string, until: number): Promise<void>;
  /** Until when the block awaits activation; null when it never did. */
  awaitingUntil(nodeId: string): Promise<number | null>;
  /** Removes the block with its devices, their history, queued commands and its tokens; returns the token hashes deleted. */
  remove(nodeId: string): Promise<string[]>;
}
