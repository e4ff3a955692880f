/** SIGINT/SIGTERM for the long-running commands: stop cleanly once, exit 0, or 1 when stopping failed. */
import type { Logger } from "pino";

export function stopOnSignals(logger: Logger, stop: () => Promise<void>): void {
  const onSignal = (signal: string): void => {
    logger.info({ signal }, "stopping");
    stop().then(
      () => process.exit(0),
      (err: unknown) => {
        logger.error({ err }, "stopping failed");
        process.exit(1);
      },
    );
  };
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
}
