/** Shared pieces of the benchmarks: percentiles, a machine line, and figure printing. */
import { cpus, totalmem } from "node:os";

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i] as number;
}

export function machine(): string {
  const c = cpus();
  return `${c.length} × ${c[0]?.model ?? "cpu"}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, node ${process.version}`;
}

/** Prints `name: value unit` and, with a baseline, the ratio value/baseline. */
export function figure(name: string, value: number, unit: string, baseline?: { name: string; value: number }): void {
  const v = Number.isInteger(value) ? String(value) : value.toFixed(2);
  const ratio = baseline ? `  (${(value / baseline.value).toFixed(2)} × ${baseline.name})` : "";
  process.stdout.write(`${name}: ${v} ${unit}${ratio}\n`);
}

/**
 * Calls send(i) once a second for each of `blocks`, spread over 100 random 10 ms slots; each tick
 * sends every slot that came due since the last one, so a late tick does not lose rate. Returns stop.
 */
export function sendEverySecond(blocks: number, send: (i: number) => void): () => void {
  const slots: number[][] = Array.from({ length: 100 }, () => []);
  for (let i = 0; i < blocks; i++) (slots[Math.floor(Math.random() * 100)] as number[]).push(i);
  const t0 = performance.now();
  let next = 0;
  const ticker = setInterval(() => {
    const due = Math.floor((performance.now() - t0) / 10);
    for (; next <= due; next++) for (const i of slots[next % 100] as number[]) send(i);
  }, 10);
  return () => clearInterval(ticker);
}
