/** Shared pieces of the benchmarks: medians and percentiles, a machine line, and figure printing. */
import { cpus, totalmem } from "node:os";

/**
 * The q-quantile (0..1) of ascending `sorted` by linear interpolation between its neighbours
 * (Hyndman and Fan's type 7, numpy's default): the median of an even count is the mean of the two
 * middle values, and the quartiles and percentiles follow the same rule. NaN when empty; a
 * position on a value, or between equal ones (two Infinity values too), gives that value.
 */
function quantileOfSorted(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  const pos = (sorted.length - 1) * Math.min(1, Math.max(0, q));
  const at = Math.floor(pos);
  const lo = sorted[at] as number;
  const hi = sorted[Math.ceil(pos)] as number;
  return pos === at || lo === hi ? lo : lo + (hi - lo) * (pos - at);
}

/** The q-quantile (0..1) of `values`, in any order (see quantileOfSorted). */
export function quantile(values: readonly number[], q: number): number {
  return quantileOfSorted([...values].sort((a, b) => a - b), q);
}

/** The median of `values`, in any order: the middle one, or the mean of the two middle ones. */
export function median(values: readonly number[]): number {
  return quantile(values, 0.5);
}

/** The p-th percentile (0..100) of ascending `sorted`: the same rule as quantile(), p50 the median. */
export function percentile(sorted: readonly number[], p: number): number {
  return quantileOfSorted(sorted, p / 100);
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
