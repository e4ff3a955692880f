/**
 * Keeps one commands long-poll open. Each answer's commands are handed to `route` in order; any
 * failure (network, 5xx, 429, a malformed answer) waits with full-jitter backoff (1 s to 2 min,
 * reset after 30 s of health) before the next poll. A 401/403 stops polling and reports the
 * revocation; the agent activates again.
 */
import type { Logger } from "pino";
import { type BlockClient, BlockClientError } from "../../protocol/block-client.js";
import type { Command } from "../../protocol/payloads.js";
import { Backoff, sleep } from "./backoff.js";

export interface PollerHooks {
  token(): string | null;
  route(cmd: Command): Promise<void>;
  unauthorized(err: BlockClientError): void;
  reachable(up: boolean, err?: unknown): void;
}

export class CommandPoller {
  private abort = new AbortController();
  private loop: Promise<void> | null = null;
  private wake: (() => void) | null = null;
  private nap: AbortController | null = null;

  constructor(
    private readonly client: BlockClient,
    private readonly hooks: PollerHooks,
    private readonly log: Logger,
    readonly backoff: Backoff = new Backoff(),
  ) {}

  start(): void {
    if (this.loop) return;
    this.abort = new AbortController();
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.abort.abort();
    this.notify();
    await this.loop;
    this.loop = null;
  }

  /** The server answered someone else (the poller or the uplink): end a backoff wait now. */
  retryNow(): void {
    this.nap?.abort();
  }

  private async backoffSleep(ms: number, signal: AbortSignal): Promise<void> {
    const nap = new AbortController();
    this.nap = nap;
    await sleep(ms, AbortSignal.any([signal, nap.signal]));
    this.nap = null;
  }

  /** A token is available again. */
  notify(): void {
    const w = this.wake;
    this.wake = null;
    w?.();
  }

  private async run(): Promise<void> {
    const signal = this.abort.signal;
    while (!signal.aborted) {
      const token = this.hooks.token();
      if (!token) {
        await new Promise<void>((resolve) => {
          this.wake = resolve;
          if (signal.aborted) resolve();
        });
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
