/**
 * Activation: the stored token when there is one; else the direct flow with the user token, else
 * the two-legged held GET asked again and again until a user claims the node. Network failures back
 * off with full jitter; a refused user token falls back to the two-legged flow. A 429 (the server
 * rate-limits the credential) is backpressure: the same request is asked again after the server's
 * Retry-After plus the backoff's jitter (so throttled blocks do not all come back at one instant),
 * or after the backoff alone when the server gave none.
 *
 * stop() abandons the request in flight; finish() lets it be answered first (bounded). The server
 * carries out an activation request it received whether or not the block still waits for the
 * answer: a block that abandons it may be claimed without knowing (the simulator's stop, issue 18).
 * finish(ms, true) is for a block its caller knows was claimed: when no request brings the token
 * (none in flight, as between two held requests, or one answered without it), one more is sent,
 * within the same `ms`, to fetch the token the server keeps for it.
 */
import type { Logger } from "pino";
import { type BlockClient, BlockClientError } from "../../protocol/block-client.js";
import { type Backoff, type Wait, retryAfterFloor, sleep } from "./backoff.js";
import type { TokenStore } from "./types.js";

/**
 * What became of the request in flight when activation was finished (finish()): none was in flight,
 * it was answered (with a token or not), or it was abandoned unanswered (the server may still carry it out).
 */
export type ActivationEnd = "none" | "answered" | "abandoned";

export class Activator {
  /** Ends the loop: no new request, no more waits. */
  private abort = new AbortController();
  /** The request in flight's own: aborted by stop(), or by finish() once its time is up. */
  private request: AbortController | null = null;
  /** The last run(), for finish() to wait on. */
  private running: Promise<string | null> = Promise.resolve(null);
  /** Set by finish(ms, true): the loop, once stopped without a token, sends one more request, ended by this time (the clock's, ms). */
  private lastTryUntil: number | null = null;
  /** Whether lastTry() sent its request. */
  private lastTrySent = false;
  /** Whether finish()'s time ran out with a request unanswered. */
  private abandoned = false;
  /** Activation requests answered 429 (each asked again after the Retry-After), for the agent's stats. */
  throttled = 0;

  constructor(
    private readonly client: BlockClient,
    private readonly tokens: TokenStore,
    private readonly log: Logger,
    private readonly backoff: Backoff,
    private userToken: string | undefined,
    /** The agent's clock (BlockAgentOptions.clock): finish()'s bound on the one more request is read on it. */
    private readonly clock: () => number = Date.now,
    /** The backoff waits. Default: a timer. */
    private readonly wait: Wait = sleep,
  ) {}

  /** Resolves with a token, or null when stopped first (or finished without one). */
  run(): Promise<string | null> {
    this.running = this.loop();
    return this.running;
  }

  private async loop(): Promise<string | null> {
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
        const request = new AbortController();
        this.request = request;
        let token: string | null;
        try {
          token = await this.client.activate({ userToken: this.userToken, signal: request.signal });
        } finally {
          this.request = null;
        }
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
        await this.wait(delay, signal);
      }
    }
    return this.lastTry();
  }

  /** finish(ms, true): one more request for the token of a block its caller claimed, within finish()'s time. */
  private async lastTry(): Promise<string | null> {
    const until = this.lastTryUntil;
    this.lastTryUntil = null;
    if (until === null || this.clock() >= until) return null;
    const request = new AbortController();
    this.request = request;
    this.lastTrySent = true;
    try {
      const token = await this.client.activate({ userToken: this.userToken, signal: request.signal });
      if (!token) return null;
      await this.tokens.save(token);
      return token;
    } catch (err) {
      if (request.signal.aborted) this.abandoned = true;
      else this.log.warn({ err: (err as Error).message }, "activation request at the stop failed");
      return null;
    } finally {
      this.request = null;
    }
  }

  /** Whether an activation request is waiting for its answer. */
  get inFlight(): boolean {
    return this.request !== null;
  }

  /** Forgets the stored token (it was refused). */
  forget(): Promise<void> {
    return this.tokens.clear();
  }

  stop(): void {
    this.abort.abort();
    this.request?.abort();
  }

  /**
   * Stops asking (no new request, no more waits) but lets the request in flight be answered for up
   * to `ms` (0: abandon it, as stop() does); a token it brings is stored and run() resolves with it.
   * With `claimed` (the caller knows a user claimed the block), a loop that stops without a token
   * (no request in flight, or one answered without it) sends one more request, within the same `ms`.
   * Resolves with what became of the requests once run() has settled: "abandoned" when the time ran
   * out on one, "answered" when one was answered, "none" when none was in flight or sent.
   */
  async finish(ms: number, claimed = false): Promise<ActivationEnd> {
    const request = this.request;
    this.abandoned = false;
    this.lastTrySent = false;
    if (claimed && ms > 0) this.lastTryUntil = this.clock() + ms;
    this.abort.abort();
    // A failed run() (the token store) was reported by its caller.
    const settled = (): Promise<unknown> => this.running.catch(() => null);
    if (request === null && this.lastTryUntil === null) {
      await settled();
      return "none";
    }
    if (ms <= 0) request?.abort();
    const timer =
      ms > 0
        ? setTimeout(() => {
            this.lastTryUntil = null;
            if (this.request) {
              this.abandoned = true;
              this.request.abort();
            }
          }, ms)
        : undefined;
    await settled();
    clearTimeout(timer);
    this.lastTryUntil = null;
    if (request?.signal.aborted || this.abandoned) return "abandoned";
    return request !== null || this.lastTrySent ? "answered" : "none";
  }
}
