/**
 * OAuth 2 authorization-code grant (spec "OAuth 2", DESIGN.md "OAuth"): applications registered by
 * a user, single-use codes that live 10 minutes (stored hashed), and access tokens of kind `oauth`
 * that last until revoked. Client secrets are stored as sha256 digests and compared in constant time.
 */
import { randomBytes } from "node:crypto";
import { badRequest, notFound, unauthorized } from "../../errors.js";
import type { OAuthAppRow, Store } from "../../store/types.js";
import type { AuthService } from "../auth.js";
import { hashToken, newToken, safeEqual } from "../secrets.js";

export const CODE_TTL_MS = 10 * 60 * 1000;
export const APP_NAME_MAX = 80;
export const REDIRECT_URI_MAX = 2000;

export interface NewApp {
  client_id: string;
  client_secret: string;
}

export interface AppView extends OAuthAppRow {
  /** Live access tokens issued to the application, over all users. */
  tokens: number;
}

export interface Grant {
  client_id: string;
  name: string;
  tokens: number;
}

/** What GET /oauth/authorize asked for, once client_id and redirect_uri are known to be right. */
export interface AuthorizeRequest {
  app: OAuthAppRow;
  redirectUri: string;
  scope: string;
  state: string | undefined;
}

/** A problem that is reported to the client at its redirect URI (RFC 6749 4.1.2.1). */
export interface RedirectError {
  redirectUri: string;
  state: string | undefined;
  error: "invalid_request" | "invalid_scope" | "unsupported_response_type" | "access_denied";
  description: string;
}

const str = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);

export function checkAppName(name: unknown): string {
  const n = typeof name === "string" ? name.trim() : "";
  if (n.length === 0 || n.length > APP_NAME_MAX) throw badRequest(`name: give the application a name of 1-${APP_NAME_MAX} characters`);
  return n;
}

export function checkRedirectUri(uri: unknown): string {
  const u = typeof uri === "string" ? uri.trim() : "";
  let parsed: URL;
  try {
    parsed = new URL(u);
  } catch {
    throw badRequest(`redirect_uri: "${u.slice(0, 100)}" is not an absolute URL`);
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") throw badRequest("redirect_uri: use an http or https URL");
  if (parsed.hash !== "" || u.includes("#")) throw badRequest("redirect_uri: a redirect URI has no #fragment");
  if (u.length > REDIRECT_URI_MAX) throw badRequest(`redirect_uri: longer than ${REDIRECT_URI_MAX} characters`);
  return u;
}

/** Appends parameters to a redirect URI, keeping its own query. */
export function withParams(uri: string, params: Record<string, string | undefined>): string {
  const u = new URL(uri);
  for (const [k, v] of Object.entries(params)) if (v !== undefined) u.searchParams.set(k, v);
  return u.toString();
}

export class OAuthService {
  constructor(
    private readonly store: Store,
    private readonly auth: AuthService,
    private readonly clock: () => number,
  ) {}

  async createApp(userId: number, name: unknown, redirectUri: unknown): Promise<NewApp> {
    const row: OAuthAppRow = {
      client_id: randomBytes(16).toString("hex"),
      user_id: userId,
      name: checkAppName(name),
      redirect_uri: checkRedirectUri(redirectUri),
      secret_hash: "",
      created: this.clock(),
    };
    const secret = newToken();
    row.secret_hash = hashToken(secret);
    await this.store.oauthApps.put(row);
    return { client_id: row.client_id, client_secret: secret };
  }

  async listApps(userId: number): Promise<AppView[]> {
    const apps = await this.store.oauthApps.list(userId);
    return Promise.all(
      apps.map(async (a) => ({ ...a, tokens: (await this.store.tokens.list({ client_id: a.client_id, kind: "oauth" })).length })),
    );
  }

  /** The user's own application, or 404 (another user's application is reported as unknown). */
  async ownApp(userId: number, clientId: unknown): Promise<OAuthAppRow> {
    const app = typeof clientId === "string" ? await this.store.oauthApps.get(clientId) : null;
    if (!app || app.user_id !== userId) throw notFound(`no application ${String(clientId)} in this account`);
    return app;
  }

  /** Deletes the user's application and revokes every token issued to it. */
  async deleteApp(userId: number, clientId: unknown): Promise<void> {
    const app = await this.ownApp(userId, clientId);
    await this.auth.revoke({ client_id: app.client_id, kind: "oauth" });
    await this.store.oauthApps.remove(app.client_id);
  }

  /** Revokes every token issued to the user's application (all users' grants); returns how many. */
  async revokeAppTokens(userId: number, clientId: unknown): Promise<number> {
    const app = await this.ownApp(userId, clientId);
    return this.auth.revoke({ client_id: app.client_id, kind: "oauth" });
  }

  /** Applications that hold tokens to the user's account. */
  async grants(userId: number): Promise<Grant[]> {
    const tokens = await this.store.tokens.list({ user_id: userId, kind: "oauth" });
    const counts = new Map<string, number>();
    for (const t of tokens) if (t.client_id) counts.set(t.client_id, (counts.get(t.client_id) ?? 0) + 1);
    const out: Grant[] = [];
    for (const [clientId, n] of counts) {
      const app = await this.store.oauthApps.get(clientId);
      out.push({ client_id: clientId, name: app?.name ?? "(deleted application)", tokens: n });
    }
    return out;
  }

  /** Withdraws the user's grant to an application: revokes the tokens it holds to this account. */
  revokeGrant(userId: number, clientId: unknown): Promise<number> {
    if (typeof clientId !== "string" || clientId === "") throw badRequest("client_id: which application?");
    return this.auth.revoke({ user_id: userId, client_id: clientId, kind: "oauth" });
  }

  /**
   * Checks an authorization request. A bad client_id or redirect_uri throws (the user is told; the
   * browser is never sent to an unverified address); a bad scope or response_type is returned as a
   * RedirectError for the client.
   */
  async checkAuthorize(q: Record<string, unknown>): Promise<AuthorizeRequest | RedirectError> {
    const clientId = str(q.client_id);
    if (!clientId) throw badRequest("client_id is missing");
    const app = await this.store.oauthApps.get(clientId);
    if (!app) throw badRequest(`client_id ${clientId.slice(0, 64)} is not a registered application`);
    const redirectUri = str(q.redirect_uri);
    if (!redirectUri) throw badRequest("redirect_uri is missing");
    if (!safeEqual(redirectUri, app.redirect_uri)) throw badRequest("redirect_uri does not match the one registered for this application");
    const state = str(q.state);
    const responseType = str(q.response_type);
    if (responseType !== "code") {
      const description = responseType ? `response_type ${responseType} is not supported: use code` : "response_type is missing: use code";
      return { redirectUri, state, error: responseType ? "unsupported_response_type" : "invalid_request", description };
    }
    const scope = str(q.scope);
    const scopes = (scope ?? "").split(/[,\s]+/).filter((s) => s !== "");
    if (scopes.length === 0) return { redirectUri, state, error: "invalid_request", description: "scope is missing: use all" };
    const bad = scopes.find((s) => s !== "all");
    if (bad !== undefined) return { redirectUri, state, error: "invalid_scope", description: `scope ${bad} is not supported: only all` };
    return { app, redirectUri, scope: "all", state };
  }

  /** A new single-use code for the user's approval. */
  async issueCode(userId: number, req: AuthorizeRequest): Promise<string> {
    const code = newToken();
    await this.store.oauthCodes.put({
      hash: hashToken(code),
      client_id: req.app.client_id,
      user_id: userId,
      redirect_uri: req.redirectUri,
      expires: this.clock() + CODE_TTL_MS,
    });
    return code;
  }

  /** Step 2: exchanges a code for an access token. Errors name the OAuth error code first. */
  async exchange(body: Record<string, unknown>): Promise<string> {
    const grantType = str(body.grant_type);
    if (!grantType) throw badRequest("invalid_request: grant_type is missing (use authorization_code)");
    if (grantType !== "authorization_code") throw badRequest(`unsupported_grant_type: ${grantType.slice(0, 64)} (use authorization_code)`);
    const clientId = str(body.client_id);
    const secret = str(body.client_secret);
    if (!clientId) throw badRequest("invalid_request: client_id is missing");
    if (!secret) throw badRequest("invalid_request: client_secret is missing");
    const code = str(body.code);
    if (!code) throw badRequest("invalid_request: code is missing");
    const app = await this.store.oauthApps.get(clientId);
    // Hash even for an unknown client, so the answer takes the same time.
    const secretOk = safeEqual(hashToken(secret), app?.secret_hash ?? hashToken(""));
    if (!app || !secretOk) throw unauthorized("invalid_client: unknown client_id or wrong client_secret");
    const hash = hashToken(code);
    const found = await this.store.oauthCodes.consume(hash);
    if (!found || found.row.client_id !== app.client_id) throw badRequest("invalid_grant: unknown code");
    if (found.replayed) {
      // A replayed code may have been stolen: withdraw what it bought (RFC 6749 4.1.2).
      if (found.row.token_hash) await this.auth.revoke({ hash: found.row.token_hash });
      throw badRequest("invalid_grant: this code was already used");
    }
    if (found.row.expires <= this.clock()) throw badRequest("invalid_grant: this code has expired (codes live 10 minutes)");
    const redirectUri = str(body.redirect_uri);
    if (redirectUri !== undefined && redirectUri !== found.row.redirect_uri) {
      throw badRequest("invalid_grant: redirect_uri differs from the one of the authorization request");
    }
    const token = await this.auth.issue(found.row.user_id, "oauth", { clientId: app.client_id });
    await this.store.oauthCodes.setToken(hash, hashToken(token));
    return token;
  }

  /** Forgets codes that expired more than a day ago (a replay inside that day still revokes). */
  pruneCodes(): Promise<number> {
    return this.store.oauthCodes.prune(this.clock() - 24 * 3600 * 1000);
  }
}
