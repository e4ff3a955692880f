/** `blockkit sim cleanup --node-prefix P`: removes the leftovers of earlier runs (callbacks, blocks). */
import { type Command, InvalidArgumentError } from "commander";
import { readsRunOptions } from "./sim-sub.js";
import { addTargetOptions, target } from "./sim-target.js";

interface CleanupFlags {
  server?: string[];
  stream?: string;
  token?: string;
  nodePrefix: string;
}

function prefix(value: string): string {
  if (!/^[A-Za-z0-9]{1,64}$/.test(value)) throw new InvalidArgumentError(`"${value}" is not 1-64 letters and digits (the start of the fleet's node ids)`);
  return value;
}

export function registerCleanup(sim: Command): void {
  const cleanup = addTargetOptions(sim.command("cleanup").description("unpair the blocks whose node id starts with a prefix, and remove their devices' callbacks"), {
    several: false,
    stream: false,
  })
    .requiredOption("--node-prefix <prefix>", "start of the node ids of the fleet (SIM1N for the default pattern with seed 1)", prefix)
    .action(async (_local: CleanupFlags, command: Command) => {
      const { ApiClient } = await import("../protocol/api-client.js");
      const { cleanupPrefix } = await import("../simulator/cleanup.js");
      const flags = command.optsWithGlobals<CleanupFlags>();
      const { targets, token } = target(flags, "blockkit sim cleanup", true);
      const first = targets[0] as (typeof targets)[number];
      const api = new ApiClient({ baseUrl: first.baseUrl, token });
      let result;
      try {
        result = await cleanupPrefix(api, flags.nodePrefix);
      } catch (err) {
        process.stderr.write(`blockkit sim cleanup: ${(err as Error).message}\n`);
        process.exit(3);
      }
      process.stderr.write(`cleanup: ${result.blocks} blocks unpaired, ${result.callbacks} callbacks removed${result.failed.length > 0 ? `, ${result.failed.length} failed` : ""}\n`);
      for (const f of result.failed.slice(0, 20)) process.stderr.write(`failed: ${f}\n`);
      process.exit(result.failed.length > 0 ? 1 : 0);
    });
  readsRunOptions(cleanup, ["--server", "--token", "--profile"], "it removes what earlier runs left on a server (give --node-prefix)");
}
