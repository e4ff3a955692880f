/**
 * `blockkit gateway` as a child process, the way systemd runs it, on ports the kernel picks
 * (`--health-port 0`, `--mqtt-listen 0`): the ready line names the bound ones. Ports picked
 * beforehand (free a moment ago) raced: another test's listener could take one before the gateway bound it.
 */
import { type CliProcess, spawnCli, stopProcess } from "../helpers/process.js";
import { request } from "undici";

/** What the gateway prints on stdout once every part started: `blockkit gateway ready node ID [health URL] [mqtt URL]`. */
export const GATEWAY_READY = /^blockkit gateway ready node (\S+)(?: health (\S+))?(?: mqtt (\S+))?$/;

/** Where the gateway's listeners are, as its ready line names them (null: not running). */
export interface GatewayListeners {
  /** `http://host:port` of /healthz and /metrics. */
  health: string | null;
  /** `mqtt://host:port` of the embedded broker. */
  mqtt: string | null;
}

/** Waits (bounded) for the ready line of a `blockkit gateway` process; throws when a URL in it does not parse. */
export async function waitForGatewayReady(p: CliProcess, timeoutMs = 20_000): Promise<GatewayListeners> {
  const m = await p.waitForLine(GATEWAY_READY, timeoutMs);
  const checked = (u: string | undefined): string | null => {
    if (u === undefined) return null;
    const url = new URL(u);
    if (!url.port || url.port === "0") throw new Error(`the ready line names no bound port: ${m[0]}`);
    return u;
  };
  return { health: checked(m[2]), mqtt: checked(m[3]) };
}

export class GatewayProcess {
  private proc: CliProcess | null = null;
  /** From the last start's ready line: the ports change at every start. */
  listeners: GatewayListeners = { health: null, mqtt: null };

  /** `args` of `blockkit gateway`; `--health-port 0` is added. */
  constructor(private readonly args: string[]) {}

  /** Starts it and resolves once it printed its ready line. */
  async start(timeoutMs = 20_000): Promise<void> {
    const p = spawnCli(["gateway", ...this.args, "--health-port", "0"], { BLOCKKIT_LOG_LEVEL: "warn" });
    this.proc = p;
    try {
      this.listeners = await waitForGatewayReady(p, timeoutMs);
    } catch (err) {
      await stopProcess(p, "SIGKILL").catch(() => undefined);
      throw new Error(`gateway not ready: ${(err as Error).message}\n${p.stderr.slice(-30).join("\n")}`);
    }
  }

  /** The embedded broker's URL (`--mqtt-listen 0`). */
  get mqttUrl(): string {
    if (!this.listeners.mqtt) throw new Error("the gateway named no embedded broker in its ready line (no --mqtt-listen?)");
    return this.listeners.mqtt;
  }

  async health(): Promise<{ agent: string; links: Record<string, string>; outbox: { rows: number; dropped: number } }> {
    if (!this.listeners.health) throw new Error("the gateway named no health port in its ready line");
    const res = await request(`${this.listeners.health}/healthz`);
    return (await res.body.json()) as { agent: string; links: Record<string, string>; outbox: { rows: number; dropped: number } };
  }

  /** Kills it with `signal` and waits for the exit. */
  async kill(signal: NodeJS.Signals = "SIGKILL"): Promise<void> {
    const p = this.proc;
    this.proc = null;
    this.listeners = { health: null, mqtt: null };
    if (p) await stopProcess(p, signal);
  }
}
