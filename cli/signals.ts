/**
 * SIGINT/SIGTERM for the long-running commands: stop cleanly once, exit 0, or 1 when stopping
 * failed. Process managers and scripts often send a second SIGTERM while the first stop is still
 * running (and the default action of an unhandled one is to die at once, before held polls are
 * answered and the store is closed): every further SIGTERM is taken as the same request. A second
 * SIGINT (Ctrl-C again at a terminal) calls `hurry` when given (close open connections instead of
 * waiting for them); the stop still ends with the store closed. Further signals are logged only.
 */
import type { Logger } from "pino";

export function stopOnSignals(logger: Logger, stop: () => Promise<void>, hurry?: () => void): void {
  let stopping = false;
  let hurried = false;
  const onSignal = (signal: NodeJS.Signals): void => {
    if (!stopping) {
      stopping = true;
      logger.info({ signal }, "stopping");
      stop().then(
        () => process.exit(0),
        (err: unknown) => {
          logger.error({ err }, "stopping failed");
          process.exit(1);
        },
      );
      return;
    }
    if (signal === "SIGINT" && hurry && !hurried) {
      hurried = true;
      logger.warn({ signal }, "second SIGINT: stopping faster (open connections are closed); the store is still closed cleanly");
      hurry();
      return;
    }
    logger.info({ signal }, "already stopping: signal taken as the same request");
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
}
