/**
 * Keeps one commands long-poll open. Each answer's commands are handed to `route` in order; any
 * failure (network, 5xx, 429, a malformed answer) waits with full-jitter backoff (1 s to 2 min,
 * reset after 30 s of health) before the next poll. A 401/403 stops polling and reports the
 * revocation; the agent activates again.
 */
import type { Logger } from "pino";
import { type BlockClient, BlockClientError } from "../../protocol/block-client.js";
import type { Command } from "../../protocol/payloads.js";
import { Backoff } from "./backoff.js";
import { AgentLoop } from "./loop.js";

export interface PollerHooks {
  token(): string | null;
  route(cmd: Command): Promise<void>;
  unauthorized(err: BlockClientError): void;
  reachable(up: boolean, err?: unknown): void;
}

export class CommandPoller extends AgentLoop {
  constructor(
    private readonly client: BlockClient,
    private readonly hooks: PollerHooks,
    private readonly log: Logger,
    readonly backoff: Backoff = new Backoff(),
  ) {
    super();
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
        this.hooks.reachable(false, e);
        const delay = this.backoff.fail();
        this.log.warn({ err: e.message, delayMs: delay, attempt: this.backoff.attempts }, "commands poll failed, backing off");
        await this.backoffSleep(delay, signal);
        continue;
      }
      this.backoff.succeed();
      this.hooks.reachable(true);
      for (const cmd of commands) await this.hooks.route(cmd);
    }
  }
}
