#!/usr/bin/env node
/** `blockkit`: one command line for the server, the gateway, the simulator and the API. */
import { registerApps } from "./apps.js";
import { Command } from "commander";
import { registerGateway } from "./gateway.js";
import { registerServer } from "./server.js";
import { registerSim } from "./sim.js";

const program = new Command();
program.name("blockkit").description("blockkit: block service, gateway and fleet simulator").version("0.1.0");
program.showHelpAfterError();
registerApps(program);
registerServer(program);
registerGateway(program);
registerSim(program);

program.parseAsync(process.argv).catch((err: unknown) => {
  process.stderr.write(`blockkit: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
