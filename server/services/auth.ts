/**
 * Credentials: user access tokens (query `user_access_token`), OAuth access tokens (query
 * `access_token`), block tokens and the virtual block token (header `X-Service-Token`).
 *
 * The read cache of tokens (hash -> row) lives here, not in the store: the fast ingest lane answers
 * from it synchronously (cachedBlock). Every revocation goes through revoke()/forget(), which drop
 * the hashes here and announce them on the Bus (TOKENS_CHANNEL), so that every instance drops them
 * at once; a Bus that lost its connection asks for a full clear (Bus.onResync).
 */
import type { Bus } from "../bus/types.js";
import { badRequest, forbidden, unauthorized } from "../errors.js";
import type { Store, TokenKind, TokenMatch, TokenRow, UserRow } from "../store/types.js";
import { hashPassword, hashToken, newToken } from "./secrets.js";
import { refuseServiceNode } from "./service-devices.js";

/** Bus channel of revoked token hashes (space-separated; "*" clears every cache). */
export const TOKENS_CHANNEL = "auth:revoked";
/** Hashes per Bus message: 64 hex characters each, well under a PostgreSQL NOTIFY payload. */
const HASHES_PER_MESSAGE = 100;
const MAX_CACHED = 200_000;

/** A token given instead of a random one, and what a block or OAuth token belongs to. */
export interface IssueOptions {
  token?: string | undefined;
  nodeId?: string;
  clientId?: string;
}

export interface UserPrincipal {
  userId: number;
  /** The credential: a personal token, an OAuth token, or a browser session (the dashboard). */
  via: "user" | "oauth" | "session";
  tokenHash: string;
}

export interface BlockPrincipal {
  userId: number;
  /** The node the token belongs to; for the virtual block token, the node of the path. */
  nodeId: string;
  virtual: boolean;
  tokenHash: string;
}

export class AuthService {
  private readonly cache = new Map<string, TokenRow>();
  /** Bumped by every revocation: a read that began before one does not enter the cache. */
  private generation = 0;
  private unsubscribe: (() => void)[] = [];
  private poller: NodeJS.Timeout | undefined;

  constructor(
    private readonly store: Store,
    private readonly clock: () => number = Date.now,
    private readonly bus: Bus | null = null,
  ) {}

  /**
   * Listens for revocations made by other instances (and this one, harmlessly), and, on a store
   * that logs every deleted token (SQLite), reads that log every `revocationPollMs`: a token
   * revoked by another process on the same store (`blockkit users token NAME`) leaves the cache
   * within that time. One small query a second; nothing on the request path.
   */
  start(revocationPollMs = 1000): void {
    const log = this.store.tokens.revokedSince?.bind(this.store.tokens);
    if (log && revocationPollMs > 0) {
      let after: number | null = null;
      let busy = false;
      const poll = (): void => {
        if (busy) return;
        busy = true;
        log(after)
          .then((r) => {
            if (after !== null && r.hashes.length > 0) {
              this.generation++;
              for (const h of r.hashes) this.cache.delete(h);
            }
            after = r.last;
          })
          .catch(() => undefined)
          .finally(() => {
            busy = false;
          });
      };
      poll();
      this.poller = setInterval(poll, revocationPollMs);
      this.poller.unref();
    }
    if (!this.bus) return;
    this.unsubscribe.push(
      this.bus.subscribe(TOKENS_CHANNEL, (message) => {
        this.generation++;
        if (message === "*") this.cache.clear();
        else for (const hash of message.split(" ")) this.cache.delete(hash);
      }),
    );
    if (this.bus.onResync) {
      this.unsubscribe.push(
        this.bus.onResync(() => {
          this.generation++;
          this.cache.clear();
        }),
      );
    }
  }

  stop(): void {
    if (this.poller) clearInterval(this.poller);
    this.poller = undefined;
    for (const u of this.unsubscribe.splice(0)) u();
  }

  /** The token's row, from the cache or the store. */
  async find(hash: string): Promise<TokenRow | null> {
    const cached = this.cache.get(hash);
    if (cached) return cached;
    const generation = this.generation;
    const row = await this.store.tokens.find(hash);
    if (row && generation === this.generation) {
      if (this.cache.size >= MAX_CACHED) this.cache.clear();
      this.cache.set(hash, row);
    }
    return row;
  }

  /** Drops revoked hashes from every instance's cache. Call after the store deleted them. */
  forget(hashes: string[]): void {
    if (hashes.length === 0) return;
    this.generation++;
    for (const h of hashes) this.cache.delete(h);
    for (let i = 0; i < hashes.length; i += HASHES_PER_MESSAGE) {
      this.bus?.publish(TOKENS_CHANNEL, hashes.slice(i, i + HASHES_PER_MESSAGE).join(" "));
    }
  }

  /** Deletes the tokens matching `match` and drops them from every cache; returns how many. */
  async revoke(match: TokenMatch): Promise<number> {
    const gone = await this.store.tokens.revoke(match);
    this.forget(gone);
    return gone.length;
  }

  /** Resolves a user credential from the query; throws 401 when missing or unknown. */
  async user(query: { user_access_token?: unknown; access_token?: unknown }): Promise<UserPrincipal> {
    if (Array.isArray(query.user_access_token) || Array.isArray(query.access_token)) {
      throw badRequest("give user_access_token or access_token once, not several times");
    }
    const personal = typeof query.user_access_token === "string" ? query.user_access_token : undefined;
    const oauth = typeof query.access_token === "string" ? query.access_token : undefined;
    const token = personal ?? oauth;
    if (!token) throw unauthorized("missing credential: give user_access_token or access_token in the query");
    const hash = hashToken(token);
    const row = await this.find(hash);
    const wanted: TokenKind = personal !== undefined ? "user" : "oauth";
    if (!row || row.kind !== wanted) {
      throw unauthorized(personal !== undefined ? "unknown or revoked user_access_token" : "unknown or revoked access_token");
    }
    return { userId: row.user_id, via: wanted, tokenHash: hash };
  }

  /** Resolves the block token of header X-Service-Token (or X-Ninja-Token) for the node in the path. */
  async block(token: string | undefined, pathNodeId: string): Promise<BlockPrincipal> {
    if (!token) throw unauthorized("missing block token: send it in the X-Service-Token header (or X-Ninja-Token)");
    const hash = hashToken(token);
    const row = await this.find(hash);
    if (!row || (row.kind !== "block" && row.kind !== "vblock")) throw unauthorized("unknown or revoked block token");
    refuseServiceNode(pathNodeId);
    if (row.kind === "block") {
      if (row.node_id !== pathNodeId) throw forbidden(`this block token belongs to another node than ${pathNodeId}`);
      return { userId: row.user_id, nodeId: pathNodeId, virtual: false, tokenHash: hash };
    }
    const block = await this.store.blocks.get(pathNodeId);
    if (block && block.user_id !== row.user_id) throw forbidden(`node ${pathNodeId} belongs to another account`);
    if (block && (await this.store.tokens.list({ node_id: pathNodeId, kind: "block" })).length > 0) {
      throw forbidden(`node ${pathNodeId} is a claimed block: use its own block token`);
    }
    return { userId: row.user_id, nodeId: pathNodeId, virtual: true, tokenHash: hash };
  }

  /**
   * The principal of a block token for its own node when the token is in the store's read cache,
   * synchronously; undefined in every other case (not cached, unknown, another node, the virtual
   * block token), which the caller answers through the full path of block().
   */
  cachedBlock(token: string, pathNodeId: string): BlockPrincipal | undefined {
    const hash = hashToken(token);
    const row = this.cache.get(hash);
    // A service node's path goes through block(), which refuses it (a token made before that rule).
    if (!row || row.kind !== "block" || row.node_id !== pathNodeId || pathNodeId.startsWith("SVC")) return undefined;
    return { userId: row.user_id, nodeId: pathNodeId, virtual: false, tokenHash: hash };
  }

  /** Creates a user with a personal access token (given, or random) and returns both. */
  async createUser(name: string, opts: { password?: string; token?: string } = {}): Promise<{ user: UserRow; token: string }> {
    if (opts.password !== undefined) checkPassword(opts.password);
    const passwordHash = opts.password ? await hashPassword(opts.password) : null;
    const user = await this.store.users.create(name, passwordHash, this.clock());
    const token = await this.issue(user.id, "user", { token: opts.token });
    return { user, token };
  }

  /** Sets a user's password for the settings pages (at least MIN_PASSWORD_LENGTH characters). */
  async setPassword(userId: number, password: string): Promise<void> {
    checkPassword(password);
    await this.store.users.setPassword(userId, await hashPassword(password));
  }

  /** A new token (given, or random) and the row that stores its hash. */
  mint(userId: number, kind: TokenKind, opts: IssueOptions = {}): { token: string; row: TokenRow } {
    const token = opts.token ?? newToken();
    return { token, row: { hash: hashToken(token), kind, user_id: userId, node_id: opts.nodeId ?? null, client_id: opts.clientId ?? null, created: this.clock() } };
  }

  /**
   * Issues a token of a kind for a user. Personal and virtual block tokens are one per user: a new
   * one revokes the old.
   */
  async issue(
    userId: number,
    kind: TokenKind,
    opts: IssueOptions = {},
  ): Promise<string> {
    const { token, row } = this.mint(userId, kind, opts);
    // A new user, virtual-block or block token replaces the old one in the same transaction.
    if (kind === "user" || kind === "vblock") this.forget(await this.store.tokens.replace({ user_id: userId, kind }, row));
    else if (kind === "block" && opts.nodeId) this.forget(await this.store.tokens.replace({ node_id: opts.nodeId, kind }, row));
    else await this.store.tokens.put(row);
    return token;
  }
}

/** The shortest password accepted (`users add --password`, `users passwd`). */
export const MIN_PASSWORD_LENGTH = 8;

function checkPassword(password: string): void {
  if ([...password].length < MIN_PASSWORD_LENGTH) throw badRequest(`password must be at least ${MIN_PASSWORD_LENGTH} characters`);
}
