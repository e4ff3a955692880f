/**
 * The TUI: renders a fresh view at a fixed rate (never per event), so ten thousand blocks cost one
 * aggregation and one frame every `refreshMs`. Keys: p pause, r resume, c inject a chaos step,
 * s change the sort, ←/→ (or n/b) page, q or Ctrl-C quit.
 */
import { Box, useApp, useInput, useStdout } from "ink";
import { useEffect, useState } from "react";
import { layoutFor } from "./layout.js";
import { BlockTable, Header, HelpLine, Latency, LogPane, Rates } from "./panels.js";
import { SORT_KEYS, type SortKey, type ViewSource } from "./view.js";

export interface AppProps {
  source: ViewSource;
  /** Frame interval, ms. Default 250. */
  refreshMs?: number;
  /** Block rows per page. Default: as many as the terminal's height allows (layout.ts). */
  pageSize?: number;
  logLines?: number;
  /** Terminal size; default: the output's (80×24 when unknown). */
  columns?: number;
  rows?: number;
}

export function App({ source, refreshMs = 250, pageSize, logLines, columns, rows }: AppProps) {
  const { exit } = useApp();
  const { stdout } = useStdout();
  const [size, setSize] = useState({ columns: stdout.columns, rows: stdout.rows });
  useEffect(() => {
    const onResize = (): void => setSize({ columns: stdout.columns, rows: stdout.rows });
    stdout.on("resize", onResize);
    return () => {
      stdout.off("resize", onResize);
    };
  }, [stdout]);
  const layout = layoutFor(columns ?? size.columns, rows ?? size.rows);
  if (pageSize !== undefined) layout.pageSize = pageSize;
  if (logLines !== undefined) layout.logLines = logLines;
  const [sort, setSort] = useState<SortKey>("errors");
  const [page, setPage] = useState(0);
  const [, setFrame] = useState(0);

  useEffect(() => {
    const t = setInterval(() => setFrame((f) => f + 1), refreshMs);
    return () => clearInterval(t);
  }, [refreshMs]);

  const v = source.view({ sort, page, pageSize: layout.pageSize, logLines: layout.logLines });

  useInput((input, key) => {
    if (input === "q" || (key.ctrl && input === "c")) {
      source.quit();
      exit();
    } else if (input === "p") source.pause();
    else if (input === "r") source.resume();
    else if (input === "c") source.injectChaos();
    else if (input === "s") setSort((s) => SORT_KEYS[(SORT_KEYS.indexOf(s) + 1) % SORT_KEYS.length] as SortKey);
    else if (key.rightArrow || input === "n") setPage((p) => Math.min(p + 1, v.pages - 1));
    else if (key.leftArrow || input === "b") setPage((p) => Math.max(0, p - 1));
  });

  return (
    <Box flexDirection="column" width={layout.width}>
      <Header v={v} />
      <BlockTable v={v} layout={layout} />
      <Box>
        <Rates v={v} layout={layout} />
        <Latency v={v} />
      </Box>
      <LogPane entries={v.log} lines={layout.logLines} />
      <HelpLine />
    </Box>
  );
}
