/**
 * The TUI's layout for a terminal size: how many block rows and log lines fit, and how wide the
 * columns are. An 80×24 terminal is the floor (every panel fits without wrapping or scrolling the
 * header away); more rows give more blocks and log lines, more columns wider sparklines and node ids.
 */

export interface Layout {
  width: number;
  /** Block rows per page. */
  pageSize: number;
  logLines: number;
  nodeWidth: number;
  sparkWidth: number;
  /** Width of the rates panel; the latency panel takes the rest. */
  ratesWidth: number;
}

/** Lines other than block rows and log lines: header 2, gap 1, table heading and footer 2, rates 6, log title 1, help 1. */
const FIXED_LINES = 13;

export function layoutFor(columns: number | undefined, rows: number | undefined): Layout {
  const width = Math.max(80, Math.min(columns ?? 80, 200));
  // One line spare: a frame as tall as the terminal scrolls it by a line.
  const free = Math.max(24, rows ?? 24) - 1 - FIXED_LINES;
  const logLines = Math.max(2, Math.min(10, Math.floor(free / 4)));
  const pageSize = Math.max(5, Math.min(50, free - logLines));
  const ratesWidth = Math.floor(width / 2) - 1;
  return {
    width,
    pageSize,
    logLines,
    nodeWidth: width >= 110 ? 24 : 16,
    sparkWidth: Math.max(10, ratesWidth - 28),
    ratesWidth,
  };
}
