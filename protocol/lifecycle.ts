/**
 * One lifecycle for the parts of a program: the server's store, bus, services and listeners, the
 * gateway's outbox, agent, links and health server. Each program lists its parts once; they start
 * in that order and stop in the reverse order. Every stop runs even when another one threw (the
 * error is logged and collected, as zigbee2mqtt's controller calls its extensions), so a part that
 * fails to stop cannot leave the store and its worker thread open. A start that fails stops what
 * had already started; a stop() during start (SIGTERM while the store is still opening) aborts the
 * start's signal, stops what had started, and stops a part whose start was still running once that
 * start returns. It lives in protocol/ because the server and the gateway both use it and neither
 * may import the other; it does no I/O of its own.
 */

/** A feature with a start and a stop. Its constructor only assigns fields. */
export interface Part {
  /** Names the part in logs and errors. */
  readonly name: string;
  /**
   * Opens what the part needs (connections, listeners, timers). `signal` aborts when the program is
   * stopped meanwhile; a long start may give up early on it.
   */
  start?(signal: AbortSignal): unknown;
  /** Releases everything start() opened and clears every timer it set. Called only after start() returned. */
  stop?(): unknown;
}

/** The two log calls the lifecycle makes (a pino Logger fits). */
export interface LifecycleLog {
  info(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/** Some parts failed to stop; every other part was stopped. `errors[i]` names its part in `message`. */
export class StopError extends AggregateError {
  constructor(
    errors: Error[],
    readonly parts: string[],
  ) {
    super(errors, `${parts.length === 1 ? "a part" : `${parts.length} parts`} failed to stop: ${parts.join(", ")}`);
    this.name = "StopError";
  }
}

/** The start was cancelled by stop(); what had started was stopped. */
export class StartCancelled extends Error {
  constructor() {
    super("start cancelled: the program was asked to stop");
    this.name = "StartCancelled";
  }
}

export class Lifecycle {
  private readonly parts: Part[] = [];
  /** Started parts in start order; each is removed when it is stopped, so none stops twice. */
  private readonly started: Part[] = [];
  private readonly abort = new AbortController();
  private starting: Promise<void> | null = null;
  private stopping: Promise<void> | null = null;

  constructor(private readonly log: LifecycleLog) {}

  /** Adds parts at the end of the list (before start()). */
  add(...parts: Part[]): this {
    if (this.starting) throw new Error("Lifecycle.add() after start()");
    this.parts.push(...parts);
    return this;
  }

  /** The signal aborted by stop(): for work of the start that is not a part. */
  get signal(): AbortSignal {
    return this.abort.signal;
  }

  /**
   * Starts every part in order. Rejects with the part's error when one fails, and with
   * StartCancelled when stop() was called meanwhile; either way what had started is stopped first.
   */
  start(): Promise<void> {
    if (this.starting) return Promise.reject(new Error("Lifecycle.start() called twice"));
    this.starting = this.run();
    return this.starting;
  }

  /**
   * Stops the started parts in reverse order, each one whatever the others did, then logs
   * `stopped`. During a start, aborts it first and waits for it to unwind. Rejects with a StopError
   * naming the parts whose stop threw. Calling it again returns the same promise.
   */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      this.abort.abort(new StartCancelled());
      await this.starting?.catch(() => undefined);
      const failed = await this.stopStarted();
      if (failed.length > 0) {
        this.log.info({ failed: failed.map((f) => f.part) }, "stopped");
        throw new StopError(
          failed.map((f) => f.err),
          failed.map((f) => f.part),
        );
      }
      this.log.info({}, "stopped");
    })();
    return this.stopping;
  }

  private async run(): Promise<void> {
    const signal = this.abort.signal;
    for (const part of this.parts) {
      if (signal.aborted) break;
      const starting = (async () => part.start?.(signal))();
      let outcome: "started" | "cancelled";
      try {
        outcome = await untilAborted(starting, signal);
      } catch (err) {
        if (signal.aborted) break;
        this.log.error({ err, part: part.name }, "start failed: stopping what had started");
        await this.stopStarted();
        throw err;
      }
      if (outcome === "cancelled") {
        // Its start goes on; once it returns, what it opened is closed.
        starting.then(
          () => this.stopOne(part),
          () => undefined,
        );
        break;
      }
      this.started.push(part);
    }
    if (signal.aborted) {
      await this.stopStarted();
      throw new StartCancelled();
    }
  }

  private async stopStarted(): Promise<{ part: string; err: Error }[]> {
    const failed: { part: string; err: Error }[] = [];
    for (let part = this.started.pop(); part; part = this.started.pop()) {
      const err = await this.stopOne(part);
      if (err) failed.push({ part: part.name, err });
    }
    return failed;
  }

  /** Stops one part; logs and returns its error instead of throwing. */
  private async stopOne(part: Part): Promise<Error | null> {
    try {
      await part.stop?.();
      return null;
    } catch (thrown) {
      const err = thrown instanceof Error ? thrown : new Error(String(thrown));
      this.log.error({ err, part: part.name }, "stop failed: going on with the other parts");
      return err;
    }
  }
}

/** "started" when `p` resolves first, "cancelled" when `signal` aborts first; rejects with `p`'s error. */
function untilAborted(p: Promise<unknown>, signal: AbortSignal): Promise<"started" | "cancelled"> {
  if (signal.aborted) return Promise.resolve("cancelled");
  return new Promise((resolve, reject) => {
    const onAbort = (): void => resolve("cancelled");
    signal.addEventListener("abort", onAbort, { once: true });
    p.then(
      () => {
        signal.removeEventListener("abort", onAbort);
        resolve("started");
      },
      (err: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(err);
      },
    );
  });
}
