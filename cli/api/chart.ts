/**
 * `device data --chart`: a terminal chart of the points, drawn here in a few lines rather than with a
 * charting package (asciichart and friends draw the same thing in ~200 lines with their own options;
 * a chart of the points is all that is asked, and the gateway's Pi carries the same command line).
 * Columns of Unicode eighth blocks, `height` rows tall, with the maximum and minimum on the axis, and
 * the first and last times under it; more points than columns are averaged per column, fewer are
 * widened to fill the width.
 */
const EIGHTHS = [" ", "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"];

export interface ChartPoint {
  t: string;
  v: number | string;
}

function label(n: number): string {
  if (Number.isInteger(n)) return String(n);
  return Math.abs(n) >= 100 ? n.toFixed(0) : Math.abs(n) >= 1 ? n.toFixed(2) : n.toPrecision(3);
}

/** Fits `values` to `columns`: averaged per column when there are more, each repeated when there are fewer. */
function squeeze(values: number[], columns: number): number[] {
  if (values.length <= columns) return values.flatMap((v) => Array<number>(Math.floor(columns / values.length)).fill(v));
  const out: number[] = [];
  for (let c = 0; c < columns; c++) {
    const from = Math.floor((c * values.length) / columns);
    const to = Math.max(from + 1, Math.floor(((c + 1) * values.length) / columns));
    const slice = values.slice(from, to);
    out.push(slice.reduce((a, b) => a + b, 0) / slice.length);
  }
  return out;
}

/** The chart's lines, at most `width` columns wide; a line saying why when there is nothing to draw. */
export function chart(points: ChartPoint[], width = 80, height = 8): string[] {
  const numeric = points.map((p) => ({ t: p.t, v: typeof p.v === "number" ? p.v : Number(p.v) })).filter((p) => Number.isFinite(p.v));
  if (numeric.length < 2) return ["(fewer than two numeric points: nothing to chart)"];
  const values = numeric.map((p) => p.v);
  const max = Math.max(...values);
  const min = Math.min(...values);
  const top = label(max);
  const bottom = label(min);
  const axis = Math.max(top.length, bottom.length);
  const cols = squeeze(values, width - axis - 2);
  const span = max - min;
  // Each column's height in eighths of a row; a flat series sits at half height.
  const levels = cols.map((v) => (span === 0 ? (height * 8) / 2 : 1 + Math.round(((v - min) / span) * (height * 8 - 1))));
  const lines: string[] = [];
  for (let row = height - 1; row >= 0; row--) {
    const cells = levels.map((l) => EIGHTHS[Math.max(0, Math.min(8, l - row * 8))] ?? " ").join("");
    const name = row === height - 1 ? top : row === 0 ? bottom : "";
    lines.push(`${name.padStart(axis)} │${cells}`.trimEnd());
  }
  const first = numeric[0]?.t ?? "";
  const last = numeric[numeric.length - 1]?.t ?? "";
  const times = cols.length >= first.length + last.length + 2 ? `${first}${last.padStart(cols.length - first.length)}` : first;
  lines.push(`${" ".repeat(axis)} └${"─".repeat(cols.length)}`);
  lines.push(`${" ".repeat(axis + 2)}${times}`);
  return lines;
}
