/**
 * The `blockkit` program, built with injectable I/O so that tests run commands in-process, and
 * `runCli`, which turns every outcome into an exit code: 0 done, 1 the service (or the run) failed,
 * 2 the command line was wrong. No error message carries the token.
 */
import { Command, CommanderError } from "commander";
import { ApiError } from "../protocol/api-client.js";
import { BLOCKKIT_VERSION } from "../protocol/version.js";
import { registerApi } from "./api/index.js";
import { CliError, type CliIO, commandPath } from "./api/context.js";
import { registerApps } from "./apps.js";
import { registerBackup } from "./backup.js";
import { registerCompletion } from "./completion.js";
import { registerGateway, registerMqttPassword } from "./gateway.js";
import { registerOpenapi } from "./openapi.js";
import { teach } from "./help.js";
import { registerServer } from "./server.js";
import { registerUsers } from "./users.js";
import { registerSim } from "./sim.js";
import { registerStoreCommands } from "./store-commands.js";

export type { CliIO } from "./api/context.js";

async function readAll(stream: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(typeof chunk === "string" ? Buffer.from(chunk) : (chunk as Buffer));
  return Buffer.concat(chunks).toString("utf8");
}

/** The real process's streams and environment. */
export const processIO: CliIO = {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  env: process.env,
  readStdin: () => readAll(process.stdin),
  onInterrupt: (handler) => {
    const once = (): void => {
      off();
      handler();
    };
    const off = (): void => {
      process.off("SIGINT", once);
      process.off("SIGTERM", once);
    };
    process.on("SIGINT", once);
    process.on("SIGTERM", once);
    return off;
  },
};

/** The command whose action is running, per program: its path prefixes the errors it throws. */
const running = new WeakMap<Command, string>();

export function buildProgram(io: CliIO = processIO): Command {
  const program = new Command();
  program.name("blockkit").description("blockkit: block service, gateway, fleet simulator and API client").version(BLOCKKIT_VERSION);
  // Set before the commands are added: sub-commands copy these settings when they are created.
  program.exitOverride();
  program.configureOutput({ writeOut: io.stdout, writeErr: io.stderr });
  program.configureHelp({ showGlobalOptions: true });
  registerApps(program);
  registerServer(program);
  registerOpenapi(program);
  registerUsers(program);
  registerStoreCommands(program);
  registerBackup(program);
  registerGateway(program);
  registerMqttPassword(program);
  registerSim(program);
  registerApi(program, io);
  registerCompletion(program, io);
  teach(program, io.stderr);
  program.hook("preAction", (_root, action) => {
    running.set(program, commandPath(action));
  });
  return program;
}

/** The message of an error, with the token (when known) masked. */
function describe(err: unknown, token: string | undefined): string {
  let text: string;
  if (err instanceof ApiError) {
    text = err.status === 0 ? `cannot reach the server: ${err.message}` : `${err.status} ${err.serviceError ?? err.message}`;
  } else {
    text = err instanceof Error ? err.message : String(err);
  }
  return token ? text.split(token).join("***") : text;
}

/** Parses `argv` (node-style: [node, script, ...args]) and runs the command; resolves with the exit code. */
export async function runCli(argv: string[], io: CliIO = processIO, program: Command = buildProgram(io)): Promise<number> {
  try {
    await program.parseAsync(argv);
    return 0;
  } catch (err) {
    // Commander has already written its own message (usage errors, help, version).
    if (err instanceof CommanderError) return err.exitCode === 0 ? 0 : 2;
    const tokenAt = argv.indexOf("--token");
    const inline = argv.find((a) => a.startsWith("--token="))?.slice("--token=".length);
    const token = tokenAt >= 0 ? argv[tokenAt + 1] : (inline ?? io.env.BLOCKKIT_TOKEN);
    const command = running.get(program);
    const hint = err instanceof CliError && err.showHelp && command ? ` (see '${command} --help')` : "";
    io.stderr(`${err instanceof CliError && command ? command : "blockkit"}: ${describe(err, token)}${hint}\n`);
    return err instanceof CliError ? err.exitCode : 1;
  }
}
