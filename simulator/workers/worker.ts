/**
 * A worker process of `blockkit sim --workers N`: runs its part of the fleet headless and tells the
 * coordinator (its parent, over the IPC channel) its state twice a second, its log entries and, at
 * the end, its report. It takes orders (pause, resume, chaos, sort, stop) only from the parent: the
 * terminal's Ctrl-C reaches every process of the group, and the parent decides.
 */
import type { SimRunner } from "../runner.js";
import { blockRows, type SortKey } from "../tui/view.js";
import { type CoordinatorMessage, TOP_ROWS, type WorkerMessage } from "./messages.js";

const STATE_MS = 500;

function send(m: WorkerMessage): Promise<void> {
  return new Promise((resolve) => {
    if (!process.send || !process.connected) return resolve();
    process.send(m, undefined, {}, () => resolve());
  });
}

export async function runWorker(runner: SimRunner): Promise<void> {
  let sort: SortKey = "errors";
  process.on("SIGINT", () => {});
  process.on("SIGTERM", () => runner.requestStop());
  // The parent went away: end the run (and clean up, when asked to) rather than run on unseen.
  process.on("disconnect", () => runner.requestStop());
  process.on("message", (m: CoordinatorMessage) => {
    if (m.type === "pause") void runner.pause();
    else if (m.type === "resume") void runner.resume();
    else if (m.type === "chaos") runner.injectChaos();
    else if (m.type === "stop") runner.requestStop();
    else if (m.type === "sort") sort = m.sort;
  });
  runner.onLog((entry) => void send({ type: "log", entry }));
  const state = (): Promise<void> =>
    send({
      type: "state",
      status: runner.status(),
      histograms: { ingest: runner.metrics.ingest.encode(), command: runner.metrics.command.encode(), callback: runner.metrics.callback.encode() },
      rows: blockRows(runner, sort, 0, TOP_ROWS),
    });
  try {
    await runner.start();
    await state();
    const timer = setInterval(() => void state(), STATE_MS);
    let report;
    try {
      report = await runner.finished;
    } finally {
      clearInterval(timer);
    }
    await runner.stop();
    await state();
    await send({ type: "report", report, cleanup: runner.cleanupResult });
  } catch (err) {
    await runner.stop().catch(() => undefined);
    await send({ type: "failed", message: (err as Error).message });
    process.exitCode = 3;
  }
  process.disconnect?.();
}
