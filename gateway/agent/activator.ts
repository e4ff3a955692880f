/**
 * Activation: the stored token when there is one; else the direct flow with the user token, else
 * the two-legged held GET asked again and again until a user claims the node. Network failures back
 * off with full jitter; a refused user token falls back to the two-legged flow. A 429 (the server
 * rate-limits the credential) is backpressure: the same request is asked again after the server's
 * Retry-After plus the backoff's jitter (so throttled blocks do not all come back at one instant),
 * or after the backoff alone when the server gave none.
 */
import type { Logger } from "pino";
import { type BlockClient, BlockClientError } from "../../protocol/block-client.js";
import { type Backoff, retryAfterFloor, sleep } from "./backoff.js";
import type { TokenStore } from "./types.js";

export class Activator {
  private abort = new AbortController();
  /** Activation requests answered 429 (each asked again after the Retry-After), for the agent's stats. */
  throttled = 0;

  constructor(
    private readonly client: BlockClient,
    private readonly tokens: TokenStore,
    private readonly log: Logger,
    private readonly backoff: Backoff,
    private userToken: string | undefined,
  ) {}

  /** Resolves with a token, or null when stopped first. */
  async run(): Promise<string | null> {
    this.abort = new AbortController();
    const signal = this.abort.signal;
    const stored = await this.tokens.load();
    if (stored) return stored;
    let announced = false;
    while (!signal.aborted) {
      try {
        if (!this.userToken && !announced) {
          this.log.warn({ nodeId: this.client.nodeId }, "waiting to be claimed: add this node id to an account (POST /block)");
          announced = true;
        }
        const token = await this.client.activate({ userToken: this.userToken, signal });
        this.backoff.succeed();
        if (token) {
          await this.tokens.save(token);
          return token;
        }
      } catch (err) {
        if (signal.aborted) break;
        const e = err instanceof BlockClientError ? err : new BlockClientError(String(err), 0, { cause: err });
        if (this.userToken && (e.unauthorized || e.rejected || e.status === 404 || e.status === 409)) {
          this.log.error({ status: e.status, err: e.message }, "direct activation refused: waiting to be claimed instead");
          this.userToken = undefined;
          continue;
        }
        const delay = this.backoff.fail() + (e.throttled ? retryAfterFloor(e.retryAfterMs) : 0);
        if (e.throttled) {
          this.throttled++;
          this.log.warn({ err: e.message, delayMs: delay, retryAfterMs: e.retryAfterMs }, "activation throttled by the server (429), asking again later");
        } else this.log.warn({ err: e.message, delayMs: delay }, "activation request failed, backing off");
        await sleep(delay, signal);
      }
    }
    return null;
  }

  /** Forgets the stored token (it was refused). */
  forget(): Promise<void> {
    return this.tokens.clear();
  }

  stop(): void {
    this.abort.abort();
  }
}
