/**
 * `blockkit sim nodes`: hardware nodes behind a gateway, without hardware. Over MQTT
 * (`--mqtt URL`: each node an MQTT client on the gateway's topic scheme) or over a serial line
 * (`--serial PATH`: a node speaking the serial frames on the node's end of a pseudo-terminal pair,
 * with the original firmwares' behaviours as `--firmware`; `--serial` alone creates the pair and
 * prints the end the gateway opens). The devices come from the same flags and
 * scenario files as `blockkit sim`; with `--server`, `--token` and `--gateway-node-id` the report
 * holds the end-to-end latencies (node reading -> visible on the server, command -> node).
 */
import { writeFileSync } from "node:fs";
import { type Command, InvalidArgumentError, Option } from "commander";
import { positiveInt, positiveNumber, url } from "./options.js";
import { readsRunOptions } from "./sim-sub.js";
import { addTargetOptions } from "./sim-target.js";

interface NodesFlags {
  mqtt?: string;
  /** A path, or true: create a pseudo-terminal pair. */
  serial?: string | true;
  ptyLink?: string;
  firmware: "0.47" | "V12_1.00" | "blockkit";
  prefix: string;
  nodes: number;
  devices?: number;
  rate?: number;
  duration: number;
  seed?: number;
  scenario?: string;
  commands?: number;
  server?: string[] | string;
  token?: string;
  gatewayNodeId?: string;
  report?: string;
}

function nodeId(value: string): string {
  if (!/^[A-Za-z0-9]{12,64}$/.test(value)) throw new InvalidArgumentError(`"${value}" is not a node id (12-64 letters and digits)`);
  return value;
}

export function registerNodes(sim: Command): void {
  // Its own --server (one: it refuses several), --token and --profile, for its help: under sim's,
  // it listed "several: blocks are spread round robin over them".
  const sub = sim
    .command("nodes")
    .description("emulate hardware nodes behind a gateway, over MQTT or a serial line")
    .option("--mqtt <url>", "the gateway's MQTT broker (mqtt://HOST:PORT)", url)
    .option(
      "--serial [path]",
      "the node's end of a serial line (e.g. one side of a socat pty pair); without PATH: create a pseudo-terminal pair (needs socat) and print the path of the gateway's end on stdout",
    )
    .option("--pty-link <path>", "with --serial and no PATH: also make PATH a stable link to the gateway's end (removed at exit)")
    .addOption(new Option("--firmware <version>", "serial: the firmware to behave like").choices(["0.47", "V12_1.00", "blockkit"]).default("0.47"))
    .option("--prefix <prefix>", "MQTT topic prefix of the gateway", "blockkit")
    .option("--nodes <n>", "MQTT: nodes (clients), each with the scenario's devices", positiveInt, 1)
    .option("--gateway-node-id <id>", "the gateway's node id (with --server: the devices' GUIDs, for the end-to-end latencies)", nodeId)
    .option("--duration <seconds>", "how long to run", positiveNumber, 30);
  addTargetOptions(sub, { several: false, stream: false })
    .action(async (_local: unknown, command: Command) => {
      const flags = command.optsWithGlobals<NodesFlags>();
      const { buildScenario } = await import("./sim-run.js");
      if (!flags.mqtt === !flags.serial) {
        process.stderr.write("blockkit sim nodes: give --mqtt URL or --serial [PATH] (one of them)\n");
        process.exit(2);
      }
      let scenario;
      try {
        scenario = buildScenario({ ...flags, server: undefined, progress: 2, drain: 1, callbackHost: "127.0.0.1", duration: flags.duration, headless: true } as never);
      } catch (err) {
        process.stderr.write(`blockkit sim nodes: ${(err as Error).message}\n`);
        process.exit(2);
      }
      const log = (level: string, text: string): void => void process.stderr.write(`${level}: ${text}\n`);
      const stop = new AbortController();
      process.on("SIGINT", () => stop.abort());
      process.on("SIGTERM", () => stop.abort());
      const wait = (ms: number): Promise<void> =>
        new Promise((resolve) => {
          const t = setTimeout(resolve, ms);
          stop.signal.addEventListener("abort", () => {
            clearTimeout(t);
            resolve();
          });
        });
      let server;
      if (flags.server !== undefined || flags.gatewayNodeId !== undefined) {
        const { target } = await import("./sim-target.js");
        const { ApiClient } = await import("../protocol/api-client.js");
        const { targets, token } = target(flags, "blockkit sim nodes", true);
        if (!flags.gatewayNodeId) {
          process.stderr.write("blockkit sim nodes: with --server, give --gateway-node-id ID (the node id of the gateway the nodes are behind)\n");
          process.exit(2);
        }
        const base = (targets[0] as { baseUrl: string }).baseUrl;
        server = { api: new ApiClient({ baseUrl: base, token }), authUrl: base.replace(/\/rest\/v\d+$/, ""), token, gatewayNodeId: flags.gatewayNodeId };
      }
      const { ms } = await import("../simulator/tui/format.js");
      const lat = (name: string, s: { p50: number | null; p99: number | null; max: number | null; count: number }): string =>
        s.count === 0 ? `${name}: no samples` : `${name}: p50 ${ms(s.p50)} p99 ${ms(s.p99)} max ${ms(s.max)} ms (${s.count})`;
      if (flags.ptyLink !== undefined && flags.serial !== true) {
        process.stderr.write("blockkit sim nodes: --pty-link goes with --serial without a PATH (a pair the simulator creates)\n");
        process.exit(2);
      }
      if (flags.serial) {
        const { runSerialNode } = await import("../simulator/nodes/serial-nodes.js");
        let path = flags.serial;
        const until = wait(flags.duration * 1000);
        let pair: import("../simulator/nodes/pty-pair.js").PtyPair | null = null;
        if (path === true) {
          const { PtyPair } = await import("../simulator/nodes/pty-pair.js");
          try {
            pair = new PtyPair({ link: flags.ptyLink });
            const ends = await pair.start();
            path = ends.node;
            // stdout: the gateway's end alone, for scripts; stderr: what to do with it.
            process.stdout.write(`${ends.gateway}\n`);
            process.stderr.write(`pseudo-terminal pair: the node is on ${ends.node}; start the gateway with --serial ${ends.gateway}\n`);
            // The node powers up when the gateway opens its end, as a USB board resets on open.
            const opened = await Promise.race([pair.opened.then(() => true), until.then(() => false)]);
            if (!opened) {
              process.stderr.write(`blockkit sim nodes: no gateway opened ${ends.gateway} before the end (--duration or a signal)\n`);
              await pair.stop();
              process.exit(1);
            }
            process.stderr.write("the gateway opened its end: the node powers up\n");
          } catch (err) {
            process.stderr.write(`blockkit sim nodes: ${(err as Error).message}\n`);
            process.exit(3);
          }
        }
        try {
          const result = await runSerialNode({ path, profile: flags.firmware, scenario, log, until, server });
          process.stderr.write(`serial node (${flags.firmware}) on ${path}: ${result.readings} readings sent, ${result.commands} commands acted on\n`);
          if (result.latency_ms) {
            process.stderr.write(`commands PUT ${result.commands_sent ?? 0}, ${result.errors ?? 0} errors\n`);
            process.stderr.write(`${lat("reading -> visible on the server", result.latency_ms.visible)}\n${lat("command -> node", result.latency_ms.command)}\n`);
          }
          if ((result.errors ?? 0) > 0) process.exitCode = 1;
          if (flags.report) writeFileSync(flags.report, `${JSON.stringify(result, null, 2)}\n`);
        } catch (err) {
          process.stderr.write(`blockkit sim nodes: ${(err as Error).message}\n`);
          process.exitCode = 3;
        } finally {
          await pair?.stop();
        }
        process.exit(process.exitCode ?? 0);
      }
      const { MqttNodes } = await import("../simulator/nodes/mqtt-nodes.js");
      const nodes = new MqttNodes({ url: flags.mqtt as string, prefix: flags.prefix, scenario, nodes: flags.nodes, server, log });
      try {
        await nodes.start();
      } catch (err) {
        process.stderr.write(`blockkit sim nodes: ${(err as Error).message}\n`);
        await nodes.stop().catch(() => undefined);
        process.exit(3);
      }
      process.stderr.write(`${flags.nodes} MQTT node(s), ${nodes.deviceCount} devices on ${flags.mqtt} under ${flags.prefix}/\n`);
      await wait(flags.duration * 1000);
      // Readings published at the very end are given a moment to show on the server.
      if (server) await new Promise((r) => setTimeout(r, 1000));
      await nodes.stop();
      const r = nodes.report();
      process.stderr.write(`published ${r.published}, acknowledged ${r.pubacked}, ${r.errors} errors, commands ${r.commands_received}/${r.commands_sent}\n`);
      for (const line of [lat("publish -> PUBACK", r.latency_ms.puback), lat("reading -> visible on the server", r.latency_ms.visible), lat("command -> node", r.latency_ms.command)]) {
        process.stderr.write(`${line}\n`);
      }
      if (flags.report) writeFileSync(flags.report, `${JSON.stringify(r, null, 2)}\n`);
      process.exit(r.errors === 0 && r.pubacked === r.published ? 0 : 1);
    });
  // Its devices come from the run's device flags or scenario file (buildScenario), its end-to-end
  // latencies from --server/--token; the fleet's own options (--blocks, --workers …) mean nothing here.
  readsRunOptions(
    sub,
    ["--scenario", "--devices", "--rate", "--seed", "--commands", "--duration", "--server", "--token", "--profile", "--report"],
    "it emulates hardware nodes behind a gateway, not a fleet of blocks",
  );
}
