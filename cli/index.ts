#!/usr/bin/env node
/** `blockkit`: one command line for the server, the gateway, the simulator and the API. */
import { holdParentSigints, respawn, wantsRespawn } from "./respawn.js";

// Before the rest of the command line loads (program.js, imported below): a respawned simulator
// keeps a SIGINT its parent forwards during its start-up for the run.
holdParentSigints();

// `blockkit devices | head -1`: the reader went away; that is the end of the output, not a crash.
process.stdout.on("error", (err: NodeJS.ErrnoException) => {
  if (err.code === "EPIPE") process.exit(0);
  throw err;
});

(wantsRespawn(process.argv) ? respawn(process.argv) : import("./program.js").then(({ runCli }) => runCli(process.argv))).then(
  (code) => {
    // Success leaves long-running commands (server, gateway) running; a failure ends the process.
    if (code !== 0) process.exit(code);
  },
  (err: unknown) => {
    process.stderr.write(`blockkit: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
