/**
 * Accounts on the web: browser sessions, CSRF binding, login rate limits and OAuth. `start()` loads
 * (or creates) the server's session key and sweeps expired sessions and codes every 10 minutes.
 */
import { randomBytes } from "node:crypto";
import type { Logger } from "pino";
import { ServiceError } from "../../errors.js";
import type { Store, UserRow } from "../../store/types.js";
import type { AuthService } from "../auth.js";
import { RateLimiter } from "../rate-limit.js";
import type { Limits } from "../limits.js";
import { verifyPassword } from "../secrets.js";
import { OAuthService } from "./oauth.js";
import { Sessions } from "./sessions.js";

export interface LoginLimitOptions {
  /** Attempts allowed at once per (client address, user name). Default 10. */
  burst: number;
  /** Seconds for one more attempt to become available. Default 30. */
  refillSeconds: number;
  /** Attempts allowed at once per client address, over all names. Default 30 (3 × burst). */
  addressBurst?: number;
}

export const LOGIN_LIMIT_DEFAULTS: LoginLimitOptions = { burst: 10, refillSeconds: 30 };

export class Accounts {
  readonly sessions: Sessions;
  readonly oauth: OAuthService;
  private readonly loginLimiter: RateLimiter;
  private readonly addressLimiter: RateLimiter;
  private keyBuf: Buffer | null = null;
  private sweep: NodeJS.Timeout | undefined;

  constructor(
    private readonly store: Store,
    auth: AuthService,
    private readonly log: Logger,
    private readonly clock: () => number,
    limit: LoginLimitOptions = LOGIN_LIMIT_DEFAULTS,
    private readonly limits?: Limits,
  ) {
    this.sessions = new Sessions(store, () => this.key, clock);
    this.oauth = new OAuthService(store, auth, clock);
    this.loginLimiter = new RateLimiter({ perSecond: 1 / limit.refillSeconds, burst: limit.burst }, clock);
    const addressBurst = limit.addressBurst ?? 3 * limit.burst;
    this.addressLimiter = new RateLimiter({ perSecond: addressBurst / limit.burst / limit.refillSeconds, burst: addressBurst }, clock);
  }

  /** The HMAC key of session cookies and CSRF fields. */
  get key(): Buffer {
    if (!this.keyBuf) throw new Error("Accounts.start() has not run");
    return this.keyBuf;
  }

  async start(): Promise<void> {
    const key = await this.store.keys.getOrCreate("session", () => randomBytes(32).toString("base64"), this.clock());
    this.keyBuf = Buffer.from(key, "base64");
    this.loginLimiter.start();
    this.addressLimiter.start();
    this.sweep = setInterval(() => {
      Promise.all([this.sessions.prune(), this.oauth.pruneCodes()]).catch((err: unknown) => {
        this.log.warn({ err }, "sweeping expired sessions and codes failed");
      });
    }, 10 * 60_000);
    this.sweep.unref();
  }

  stop(): void {
    if (this.sweep) clearInterval(this.sweep);
    this.sweep = undefined;
    this.loginLimiter.stop();
    this.addressLimiter.stop();
  }

  /**
   * Checks a user name and password. Each attempt costs one from the bucket of the client address
   * and one from that of (address, user name) before the (slow) password check. Never a bucket per
   * user name alone: anyone could then keep a user locked out with a few wrong passwords a minute,
   * from anywhere. Throws 429 when a bucket is empty, with the whole seconds until it holds an
   * attempt again (Retry-After); returns null on wrong credentials.
   */
  async login(ip: string, name: string, password: string): Promise<UserRow | null> {
    const key = `${ip}\u0000${name.toLowerCase()}`;
    const waitS = !this.addressLimiter.tryTake(ip) ? this.addressLimiter.retryAfterS(ip) : !this.loginLimiter.tryTake(key) ? this.loginLimiter.retryAfterS(key) : 0;
    if (waitS > 0) {
      this.limits?.bit("login", { address: ip });
      this.log.info({ ip, user: name }, "login attempts rate-limited");
      const wait = waitS === 1 ? "a second" : `${waitS} seconds`;
      throw new ServiceError("RATE_LIMITED", `Too many login attempts. Wait ${wait} and try again.`, { retryAfterS: waitS });
    }
    const user = await this.store.users.byName(name);
    const ok = await verifyPassword(password, user?.password_hash ?? null);
    if (!user || !ok) {
      this.log.info({ ip, user: name }, "login failed");
      return null;
    }
    this.log.info({ userId: user.id }, "login");
    return user;
  }
}
