/**
 * The programs' loggers: pino's JSON lines on stderr for machines (systemd's journal, a log
 * shipper, the tests), and pino-pretty's readable lines when stderr is a terminal.
 * `BLOCKKIT_LOG_FORMAT=json|pretty` overrides the choice. pino-pretty is loaded only when used, so a
 * gateway under systemd does not carry it.
 */
import pino, { type Logger } from "pino";

export type LogFormat = "json" | "pretty";

/** The format for this process: the environment's choice, else pretty on a terminal. */
export function logFormat(env: NodeJS.ProcessEnv = process.env, stderr: { isTTY?: boolean } = process.stderr): LogFormat {
  const asked = env.BLOCKKIT_LOG_FORMAT;
  if (asked === undefined || asked === "") return stderr.isTTY ? "pretty" : "json";
  if (asked === "json" || asked === "pretty") return asked;
  throw new TypeError(`BLOCKKIT_LOG_FORMAT must be "json" or "pretty", got "${asked}"`);
}

export async function programLogger(name: string, level: string, format: LogFormat = logFormat()): Promise<Logger> {
  const options = { level, base: { name } };
  // Synchronous, as the pretty lines are: pino.destination(2) alone writes in the background, and
  // at process.exit its flush wrote what was still buffered while an earlier write was in flight, so
  // `stopped` could reach the journal before `stopping`. These programs log a few lines a minute
  // (no line per request), so a write per line costs nothing, and a crash loses no line.
  if (format === "json") return pino(options, pino.destination({ dest: 2, sync: true }));
  const { default: pretty } = await import("pino-pretty");
  return pino(options, pretty({ destination: 2, sync: true, colorize: Boolean(process.stderr.isTTY), ignore: "pid,hostname", translateTime: "SYS:HH:MM:ss.l" }));
}
