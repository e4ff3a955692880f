/** Small text helpers of the TUI: sparklines, durations, numbers. */

const BARS = "▁▂▃▄▅▆▇█";

/** A sparkline of the last `width` values, scaled to their maximum. */
export function sparkline(values: number[], width = 30): string {
  const v = values.slice(-width);
  const max = Math.max(0, ...v);
  return v.map((x) => (max === 0 ? BARS[0] : BARS[Math.min(7, Math.floor((x / max) * 7.999))])).join("");
}

/** `m:ss` (or `h:mm:ss`). */
export function duration(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const ss = String(s % 60).padStart(2, "0");
  return h > 0 ? `${h}:${String(m).padStart(2, "0")}:${ss}` : `${m}:${ss}`;
}

/** 1234 -> `1234`, 12345 -> `12.3k`, 1234567 -> `1.23M`. */
export function count(n: number): string {
  if (n < 10_000) return String(Math.round(n));
  if (n < 1_000_000) return `${(n / 1000).toFixed(1)}k`;
  return `${(n / 1_000_000).toFixed(2)}M`;
}

export function ms(v: number | null): string {
  if (v === null) return "-";
  return v < 10 ? v.toFixed(2) : v < 100 ? v.toFixed(1) : String(Math.round(v));
}

export function pad(text: string, width: number): string {
  return text.length > width ? `${text.slice(0, width - 1)}…` : text.padEnd(width);
}
