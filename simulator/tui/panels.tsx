/** The TUI's panels: header, block table, rates, latencies, log pane and help line. */
import { Box, Text } from "ink";
import type { LogEntry } from "../event-log.js";
import { count, duration, ms, pad, sparkline } from "./format.js";
import type { Layout } from "./layout.js";
import type { BlockRow, RunView } from "./view.js";

export function Header({ v }: { v: RunView }) {
  const state = v.paused ? "PAUSED" : v.phase.toUpperCase();
  const color = v.paused ? "yellow" : v.phase === "running" ? "green" : v.phase === "done" ? "blue" : "cyan";
  const b = v.blocks;
  return (
    <Box flexDirection="column">
      <Text wrap="truncate">
        <Text bold>blockkit sim</Text> {v.name} <Text color={color}>[{state}]</Text> elapsed {duration(v.elapsedMs)} remaining{" "}
        {duration(v.remainingMs)} · CPU {Math.round(v.cpuPercent)}%
      </Text>
      <Text wrap="truncate">
        blocks {b.activated}/{b.planned} activated, {b.online} online, {b.paused} paused, {b.dropped} dropped ·{" "}
        {v.metrics.counters.throttled > 0 ? <Text color="yellow">{count(v.metrics.counters.throttled)} throttled · </Text> : null}loop p99{" "}
        {ms(v.loopDelayP99Ms)} ms
      </Text>
    </Box>
  );
}

const COLS = { state: 9, rate: 6, sent: 7, acked: 7, errors: 7, backlog: 8 };

function row(r: BlockRow, layout: Layout) {
  return (
    <Text key={r.nodeId} wrap="truncate">
      {pad(r.nodeId, layout.nodeWidth)}
      <Text color={r.state === "online" ? "green" : r.state === "dropped" || r.state === "offline" ? "red" : "yellow"}>{pad(r.state, COLS.state)}</Text>
      {pad(String(r.rate), COLS.rate)}
      {pad(count(r.sent), COLS.sent)}
      {pad(count(r.acked), COLS.acked)}
      <Text color={r.errors > 0 ? "red" : undefined}>{pad(count(r.errors), COLS.errors)}</Text>
      {pad(count(r.backlog), COLS.backlog)}
      {r.devices}
    </Text>
  );
}

export function BlockTable({ v, layout }: { v: RunView; layout: Layout }) {
  return (
    <Box flexDirection="column" marginTop={1}>
      <Text bold wrap="truncate">
        {pad("block", layout.nodeWidth)}
        {pad("state", COLS.state)}
        {pad("ev/s", COLS.rate)}
        {pad("sent", COLS.sent)}
        {pad("acked", COLS.acked)}
        {pad("errors", COLS.errors)}
        {pad("backlog", COLS.backlog)}
        devices (last values)
      </Text>
      {v.rows.map((r) => row(r, layout))}
      <Text dimColor wrap="truncate">
        page {v.page + 1}/{v.pages} · sorted by {v.sort}
      </Text>
    </Box>
  );
}

export function Rates({ v, layout }: { v: RunView; layout: Layout }) {
  const s = v.metrics.series;
  const c = v.metrics.counters;
  const last = (a: number[]): number => a[a.length - 1] ?? 0;
  const line = (label: string, series: number[], total: number) => (
    <Text key={label} wrap="truncate">
      {pad(label, 10)}
      {pad(`${count(last(series))}/s`, 8)}
      <Text color="cyan">{pad(sparkline(series, layout.sparkWidth), layout.sparkWidth)}</Text> {count(total)}
    </Text>
  );
  return (
    <Box flexDirection="column" width={layout.ratesWidth}>
      <Text bold wrap="truncate">
        rates (last {layout.sparkWidth} s), totals
      </Text>
      {line("sent", s.sent, c.events_sent)}
      {line("acked", s.acked, c.events_acked)}
      {line("errors", s.errors, c.errors)}
      {line("commands", s.commands, c.commands_received)}
      {line("callbacks", s.callbacks, c.callbacks_received)}
    </Box>
  );
}

export function Latency({ v }: { v: RunView }) {
  const m = v.metrics;
  const line = (label: string, l: RunView["metrics"]["ingest"]) => (
    <Text key={label} wrap="truncate">
      {pad(label, 9)}
      {pad(ms(l.p50), 6)}
      {pad(ms(l.p90), 6)}
      {pad(ms(l.p99), 6)}
      {pad(ms(l.max), 6)}
      {count(l.count)}
    </Text>
  );
  return (
    <Box flexDirection="column" flexGrow={1}>
      <Text bold wrap="truncate">
        {pad("ms", 9)}
        {pad("p50", 6)}
        {pad("p90", 6)}
        {pad("p99", 6)}
        {pad("max", 6)}n
      </Text>
      {line("ingest", m.ingest)}
      {line("command", m.command)}
      {line("callback", m.callback)}
      <Text dimColor wrap="truncate">
        callbacks on {v.callbackDevices} devices
      </Text>
    </Box>
  );
}

export function LogPane({ entries, lines }: { entries: LogEntry[]; lines: number }) {
  const shown = entries.slice(-lines);
  return (
    <Box flexDirection="column" height={lines + 1}>
      <Text bold>log</Text>
      {shown.length === 0 ? <Text dimColor>no errors or chaos events yet</Text> : null}
      {shown.map((e, i) => (
        <Text key={`${e.t}-${i}`} color={e.level === "error" ? "red" : e.level === "warn" ? "yellow" : undefined} wrap="truncate">
          {new Date(e.t).toISOString().slice(11, 19)} {e.text}
        </Text>
      ))}
    </Box>
  );
}

export const HELP = "p pause · r resume · c chaos · s sort · ←/→ page · q quit";

export function HelpLine() {
  return <Text dimColor>{HELP}</Text>;
}
