/**
 * `npm run bench -- soak`: the whole kit running for a while as a hub does, and whether anything
 * grows that should not. A figure, not a test: it prints what each process held over time.
 *
 * Running, each the built CLI: a server (SQLite) with a fleet of simulated blocks (readings,
 * commands, callbacks), a rule that fires on their relays, a follower of the
 * live stream (`blockkit watch`), and a gateway with a serial node on a pseudo-terminal (the
 * blockkit firmware's behaviour) and MQTT nodes on its embedded broker. Beside them, the baseline:
 * a second server with nothing to do, sampled the same way, for what Node itself drifts.
 *
 * Sampled every BENCH_SOAK_SAMPLE_S: each process's RSS and open descriptors, the servers' V8 heap
 * in use (their /metrics), the sizes of the SQLite files (database and write-ahead log) of the
 * server and of the gateway's outbox. Printed: a row a minute (the heap's lowest sample of the
 * minute, near its floor after a collection), then the growth over the second half as a slope
 * per hour, against the idle server's.
 *
 * Env: BENCH_SOAK_MINUTES (default 20), BENCH_SOAK_BLOCKS (default 50), BENCH_SOAK_SAMPLE_S
 * (default 5). Needs socat (the serial node's pseudo-terminal pair).
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Sample, Sampler, slopePerHour } from "./fixtures/soak-sample.js";
import { cli, countLines, exited, gateway, serialNode, server, stopAll } from "./fixtures/soak-procs.js";
import { machine } from "./lib.js";

const MINUTES = Number(process.env.BENCH_SOAK_MINUTES ?? 20);
const BLOCKS = Number(process.env.BENCH_SOAK_BLOCKS ?? 50);
const SAMPLE_S = Number(process.env.BENCH_SOAK_SAMPLE_S ?? 5);
for (const [name, v] of [["BENCH_SOAK_MINUTES", MINUTES], ["BENCH_SOAK_BLOCKS", BLOCKS], ["BENCH_SOAK_SAMPLE_S", SAMPLE_S]] as const) {
  if (!(v > 0)) throw new Error(`${name}: "${v}" is not a positive number`);
}
const TOKEN = "bench-soak-admin-token-0123456789";
const seconds = Math.round(MINUTES * 60);
const dir = mkdtempSync(join(tmpdir(), "blockkit-soak-"));

process.stdout.write(`${machine()}\nsoak: ${MINUTES} min, ${BLOCKS} blocks × 6 devices at 1 reading/s, 1 command/s, 10 callbacks; a gateway with a serial node and 3 MQTT nodes; an idle server beside\n`);

try {
  const idle = await server("idle server", join(dir, "idle"), TOKEN);
  const busy = await server("server", join(dir, "server"), TOKEN);
  const serial = await serialNode(seconds + 60);
  const gw = await gateway(busy, TOKEN, join(dir, "gateway"), serial.path);
  cli("mqtt nodes", ["sim", "nodes", "--mqtt", gw.mqtt, "--nodes", "3", "--devices", "3", "--duration", String(seconds + 60), "--seed", "9"]);
  const watch = cli("watch", ["watch", "--server", busy.base, "--token", TOKEN, "--json"]);
  countLines(watch);
  const report = join(dir, "fleet.json");
  const fleetStarted = performance.now();
  const fleet = cli("fleet", [
    "sim", "--server", busy.base, "--stream", busy.stream, "--token", TOKEN, "--blocks", String(BLOCKS), "--devices", "6",
    "--rate", "1", "--commands", "1", "--callbacks", "10", "--duration", String(seconds), "--headless", "--cleanup", "--report", report,
  ]);
  await addRule(busy.base);
  // The fleet measures `seconds` from its start; what it does after (drain, cleanup) is not the steady state.
  const steadyS = seconds - (performance.now() - fleetStarted) / 1000;

  const sampler = new Sampler(SAMPLE_S * 1000, [
    { name: "server", pid: busy.child.pid as number, metrics: `${busy.base}/metrics`, files: [join(dir, "server")] },
    { name: "idle server", pid: idle.child.pid as number, metrics: `${idle.base}/metrics`, files: [join(dir, "idle")] },
    { name: "gateway", pid: gw.gw.child.pid as number, files: [join(dir, "gateway")] },
  ]);
  await new Promise<void>((resolve) => fleet.child.once("exit", () => resolve()));
  const samples = sampler.stop();
  const lost = exited().filter((e) => !e.startsWith("fleet"));
  print(samples, steadyS, watch.lines, fleet.child.exitCode, report, lost);
} finally {
  await stopAll();
  rmSync(dir, { recursive: true, force: true });
}

/** A rule on the fleet's first relay and LED, so that automation runs all along (README's tour). */
async function addRule(base: string): Promise<void> {
  const q = `user_access_token=${TOKEN}`;
  for (let i = 0; i < 100; i++) {
    const devices = (await (await fetch(`${base}/rest/v0/devices?${q}`)).json()) as { data?: Record<string, { device_type: string }> };
    const ids = Object.entries(devices.data ?? {});
    const relay = ids.find(([, d]) => d.device_type === "relay")?.[0];
    const led = ids.find(([, d]) => d.device_type === "rgbled")?.[0];
    if (relay && led) {
      const rule = { shortName: "soak", preconditions: [{ handler: "serviceChange", params: { guid: relay, to: "1" } }], actions: [{ handler: "serviceSendCommand", params: { guid: led, da: "FF0000" } }] };
      const r = await fetch(`${base}/rest/v0/rule?${q}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(rule) });
      if (!r.ok) throw new Error(`rule: ${r.status} ${await r.text()}`);
      return;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error("the fleet's relay and LED did not appear within 20 s");
}

function print(samples: Sample[], steadyS: number, streamed: number, fleetExit: number | null, report: string, lost: string[]): void {
  const mb = (b: number | undefined): string => (b === undefined || Number.isNaN(b) ? "-" : (b / 2 ** 20).toFixed(1));
  const byMinute = new Map<number, Sample[]>();
  for (const s of samples) byMinute.set(Math.floor(s.atS / 60), [...(byMinute.get(Math.floor(s.atS / 60)) ?? []), s]);
  process.stdout.write("\n| minute | server RSS MiB | heap floor MiB | fds | db + wal MiB | idle RSS / heap MiB | gateway RSS MiB | fds | outbox MiB |\n|---|---|---|---|---|---|---|---|---|\n");
  for (const [m, list] of byMinute) {
    const last = list[list.length - 1] as Sample;
    const floor = (name: string): number => Math.min(...list.map((s) => s.procs[name]?.heap ?? Number.NaN));
    const p = (name: string) => last.procs[name];
    process.stdout.write(`| ${m} | ${mb(p("server")?.rss)} | ${mb(floor("server"))} | ${p("server")?.fds} | ${mb(p("server")?.files)} | ${mb(p("idle server")?.rss)} / ${mb(floor("idle server"))} | ${mb(p("gateway")?.rss)} | ${p("gateway")?.fds} | ${mb(p("gateway")?.files)} |\n`);
  }
  // The second half of the fleet's steady run: from half its measured time to its end.
  const half = samples.filter((s) => s.atS >= steadyS / 2 && s.atS <= steadyS);
  for (const name of ["server", "idle server", "gateway"]) {
    const rss = slopePerHour(half, (s) => s.procs[name]?.rss);
    const heap = slopePerHour(half, (s) => s.procs[name]?.heap);
    const fds = slopePerHour(half, (s) => s.procs[name]?.fds);
    const files = slopePerHour(half, (s) => s.procs[name]?.files);
    process.stdout.write(`${name}, second half, growth per hour: RSS ${mb(rss)} MiB, heap ${mb(heap)} MiB, fds ${fds.toFixed(1)}, files ${mb(files)} MiB\n`);
  }
  process.stdout.write(`stream follower: ${streamed} events; fleet exit ${fleetExit}\n`);
  try {
    const r = JSON.parse(readFileSync(report, "utf8")) as { counts?: Record<string, number>; errors_by_kind?: Record<string, number> };
    process.stdout.write(`fleet counts: ${JSON.stringify(r.counts)}\nfleet errors: ${JSON.stringify(r.errors_by_kind ?? {})}\n`);
  } catch (e) {
    process.stdout.write(`fleet report unreadable: ${(e as Error).message}\n`);
  }
  if (lost.length > 0) process.stdout.write(`exited before the end: ${lost.join("; ")}\n`);
}
