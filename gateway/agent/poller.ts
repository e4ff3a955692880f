/**
 * Keeps one commands long-poll open. Each answer's commands are handed to `route` in order; any
 * failure (network, 5xx, 429, a malformed answer) waits with full-jitter backoff (1 s to 2 min,
 * reset after 30 s of health) before the next poll; after a 429, the server's Retry-After first
 * (as activation does). A 401/403 stops polling and reports the revocation; the agent activates again.
 */
import type { Logger } from "pino";
import { type BlockClient, BlockClientError } from "../../protocol/block-client.js";
import type { Command } from "../../protocol/payloads.js";
import { Backoff, type Wait, retryAfterFloor, sleep } from "./backoff.js";
import { AgentLoop } from "./loop.js";

export interface PollerHooks {
  token(): string | null;
  route(cmd: Command): Promise<void>;
  unauthorized(err: BlockClientError): void;
  reachable(up: boolean, err?: unknown): void;
}

export class CommandPoller extends AgentLoop {
  /** Polls answered 429 (each asked again after the Retry-After), for the agent's stats. */
  throttled = 0;

  constructor(
    private readonly client: BlockClient,
    private readonly hooks: PollerHooks,
    private readonly log: Logger,
    readonly backoff: Backoff = new Backoff(),
    wait: Wait = sleep,
  ) {
    super(wait);
  }

  protected async run(): Promise<void> {
    const signal = this.abort.signal;
    while (!signal.aborted) {
      const token = this.hooks.token();
      if (!token) {
        await this.idle(signal);
        continue;
      }
      let commands: Command[];
      try {
        commands = await this.client.commands(token, signal);
      } catch (err) {
        if (signal.aborted) break;
        const e = err instanceof BlockClientError ? err : new BlockClientError(String(err), 0, { cause: err });
        if (e.unauthorized) {
          this.hooks.unauthorized(e);
          continue;
        }
        // A 429 is an answer: the server is reachable, and asked to be left alone for its Retry-After.
        const floor = e.throttled ? retryAfterFloor(e.retryAfterMs) : 0;
        if (e.throttled) this.throttled++;
        this.hooks.reachable(e.throttled, e);
        const delay = this.backoff.fail();
        if (e.throttled) this.log.warn({ err: e.message, delayMs: floor + delay, retryAfterMs: e.retryAfterMs }, "commands poll throttled by the server (429), polling again later");
        else this.log.warn({ err: e.message, delayMs: delay, attempt: this.backoff.attempts }, "commands poll failed, backing off");
        await this.backoffSleep(delay, signal, floor);
        continue;
      }
      this.backoff.succeed();
      this.hooks.reachable(true);
      for (const cmd of commands) await this.hooks.route(cmd);
    }
  }
}
