/** `blockkit sim replay FILE`: plays back a gateway recording (`--record`) as one virtual block. */
import { readFileSync, writeFileSync } from "node:fs";
import { type Command, Option } from "commander";
import { isNodeId } from "../protocol/guid.js";
import { positiveNumber, wholeNumber } from "./options.js";
import { readsRunOptions } from "./sim-sub.js";
import { addTargetOptions, target } from "./sim-target.js";

interface ReplayFlags {
  server?: string[];
  stream?: string;
  token?: string;
  nodeId: string;
  speed: number;
  instant?: boolean;
  seed?: number;
  report?: string;
}

export function registerReplay(sim: Command): void {
  const replay = addTargetOptions(sim.command("replay <file>").description("play back frames recorded by a gateway (--record) as a virtual block"), {
    several: false,
    stream: true,
  })
    .option("--node-id <id>", "node id of the virtual block", "REPLAY000000000")
    .option("--speed <x>", "pace multiplier (2 = twice as fast)", positiveNumber, 1)
    // Both given, --instant won silently: refused instead (exit 2).
    .addOption(new Option("--instant", "send every frame at once instead of at the recorded pace").conflicts("speed"))
    .option("--seed <n>", "random seed of the block's waits after failures: the same seed gives the same waits, as in a sim run (default: 1)", wholeNumber)
    .option("--report <file>", "write the JSON result to FILE")
    .action(async (file: string, _local: ReplayFlags, command: Command) => {
      // Loaded on use: the simulator is not part of other commands' memory.
      const { parseRecording } = await import("../simulator/replay.js");
      const { playRecording, REPLAY_STOP_DRAIN_MS } = await import("../simulator/replay-player.js");
      const { ms } = await import("../simulator/tui/format.js");
      // `sim` declares --server/--stream/--token too; commander gives them to the parent, so read both.
      const flags = command.optsWithGlobals<ReplayFlags>();
      const { targets, token } = target(flags, "blockkit sim replay", true);
      const first = targets[0] as (typeof targets)[number];
      if (!isNodeId(flags.nodeId)) {
        process.stderr.write(`blockkit sim replay: --node-id "${flags.nodeId}" is not 12-64 letters and digits\n`);
        process.exit(2);
      }
      let text: string;
      try {
        text = readFileSync(file, "utf8");
      } catch (err) {
        process.stderr.write(`blockkit sim replay: ${(err as Error).message}\n`);
        process.exit(2);
      }
      const rec = parseRecording(text);
      for (const p of rec.problems.slice(0, 20)) process.stderr.write(`skipped ${p}\n`);
      if (rec.problems.length > 20) process.stderr.write(`… and ${rec.problems.length - 20} more skipped lines\n`);
      if (rec.entries.length === 0) {
        process.stderr.write(`blockkit sim replay: ${file} holds no readings\n`);
        process.exit(2);
      }
      process.stderr.write(`replaying ${rec.readings} readings from ${rec.entries.length} frames as ${flags.nodeId}\n`);
      // Ctrl-C ends the playback; what was sent is drained briefly and summed up. A second one quits.
      const stop = new AbortController();
      process.on("SIGINT", () => {
        if (stop.signal.aborted) process.exit(130);
        process.stderr.write(`stopping: waiting up to ${REPLAY_STOP_DRAIN_MS / 1000} s for the readings sent (Ctrl-C again to quit at once)\n`);
        stop.abort();
      });
      const result = await playRecording({
        baseUrl: first.baseUrl,
        streamUrl: first.streamUrl,
        token,
        signal: stop.signal,
        seed: flags.seed ?? 1,
        nodeId: flags.nodeId,
        entries: rec.entries,
        speed: flags.instant ? 0 : flags.speed,
      });
      if (flags.report) writeFileSync(flags.report, `${JSON.stringify(result, null, 2)}\n`);
      const l = result.ingest_ms;
      process.stderr.write(
        `replayed${!result.interrupted ? "" : result.played < result.frames ? ` (interrupted after ${result.played} of ${result.frames} frames)` : " (interrupted while waiting for the readings sent)"}: ` +
          `${result.acked}/${result.sent} readings acknowledged, ${result.errors} errors, ingest p50 ${ms(l.p50)} p99 ${ms(l.p99)} ms\n`,
      );
      process.exit(result.interrupted ? 130 : result.acked === result.sent && result.errors === 0 ? 0 : 1);
    });
  readsRunOptions(replay, ["--server", "--stream", "--token", "--profile", "--report", "--seed"], "it plays back a gateway's recording as one block (give the recording file)");
}
