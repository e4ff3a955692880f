/** The API commands of `blockkit` (DESIGN.md "Interfaces"): one module per command group. */
import type { Command } from "commander";
import { registerBlocks } from "./blocks.js";
import { registerCallbacks } from "./callbacks.js";
import { registerCamera } from "./camera.js";
import type { CliIO } from "./context.js";
import { registerDevices } from "./devices.js";
import { registerProfiles } from "./profiles.js";
import { registerRules } from "./rules.js";
import { registerStatus } from "./status.js";
import { registerSubdevices } from "./subdevices.js";
import { registerWatch } from "./watch.js";

export function registerApi(program: Command, io: CliIO): void {
  registerProfiles(program, io);
  registerStatus(program, io);
  registerDevices(program, io);
  registerBlocks(program, io);
  registerRules(program, io);
  registerSubdevices(program, io);
  registerCallbacks(program, io);
  registerCamera(program, io);
  registerWatch(program, io);
}
