/**
 * A fake Ninja serial node that behaves like the original firmwares, as measured on real ones:
 * the tests of the gateway's serial link run against it over a real pseudo-terminal, and
 * `blockkit sim nodes --serial` can run fleets of it.
 *
 * Profiles:
 *  - `0.47` (V12_0.47): answers the version query in an ACK; reads its input in bursts of at most
 *    128 bytes (what arrived together is one read) and parses only the first JSON object of a read
 *    (a second command in the same write is dropped); a read that fills all 128 bytes has no
 *    terminator and answers ERROR 1, so a line of 128 bytes or more answers one ERROR 1 per
 *    128-byte chunk; a DA over 63 characters overflows its 64-byte buffer (the ACK and the action
 *    get it cut); ERROR 2 for V other than 0, 3 for a D it does not know, 4 for a bad version
 *    query; ACKs echo the command; LED heartbeats every 30 s (D 1007 then D 999); PLUGIN frames
 *    once at boot for the plugged ports.
 *  - `V12_1.00`: answers the version in an ACK; ACKs every command it can read, upper-casing a
 *    hex DA of the LEDs and sending a relay's DA as a number; never sends ERROR (an unreadable
 *    line is ignored); at boot, UNPLUG with DA 0 for each empty port 1-3 and PLUGIN for the rest.
 *  - `blockkit`: blockkit's own reading of the protocol (version in a DEVICE frame, line based,
 *    ERROR for what it cannot do), kept for comparison.
 * Every board resets when its port is opened (DTR) and is then deaf for about 1.8 s; what it
 * sends while nobody has the port open is lost. Time is injectable: `clock` (fake timers work
 * through the default one, which calls the global timers) and `timeScale` for short real runs.
 */
import { LineSplitter } from "../../protocol/serial-frames.js";
import {
  LED_DS,
  NODE_INPUT_BYTES,
  NODE_RESET_DEAF_MS,
  PROFILES,
  type ProfileSpec,
  READ_DELAY_MS,
  SERIAL_NODE_PROFILES,
  type SerialNodeProfile,
  deviceOf,
  firstJsonObject,
} from "./serial-node-firmware.js";

// The firmware's data lives in serial-node-firmware.ts; importers of the node take it from here.
export { NODE_INPUT_BYTES, NODE_RESET_DEAF_MS, SERIAL_NODE_PROFILES, type SerialNodeProfile } from "./serial-node-firmware.js";

/** The timers the node uses; the default calls the global ones at each use (so fake timers apply). */
export interface NodeClock {
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}
export const globalClock: NodeClock = {
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
};

export interface SerialNodeOptions {
  profile: SerialNodeProfile;
  /** Where the node's bytes go (the serial port). */
  write: (text: string) => void;
  /** Devices plugged into the ports 1-3 (PLUGIN at boot). Default none. */
  plugged?: { G: "1" | "2" | "3"; D: number }[];
  /** The version string; default the profile's. */
  version?: string;
  /** Default the global timers. */
  clock?: NodeClock;
  /** Multiplies the profile's delays (reset deafness, heartbeat). Default 1. */
  timeScale?: number;
  /** The port opens with DTR and resets the board (USB Uno/Nano). Default true. */
  resetOnOpen?: boolean;
  /** Called with each command the node acts on (after it is in `commands`). */
  onCommand?: (command: ActedCommand) => void;
}

/** A command the node acted on, as it understood it. */
export interface ActedCommand {
  G: string;
  V: number;
  D: number;
  DA: string | number;
  /** The DA overflowed the firmware's buffer: what it acted on was cut. */
  overflow?: boolean;
}

export class SerialNode {
  /** Commands acted on, in order. */
  readonly commands: ActedCommand[] = [];
  readonly stats = { boots: 0, errorsSent: 0, framesLost: 0, bytesIgnoredDeaf: 0, reads: 0 };
  /** Colours of the LEDs (D -> DA) as the heartbeat reports them. */
  readonly leds = new Map<number, string>([
    [1007, "000000"],
    [999, "00FF00"],
  ]);
  private readonly spec: ProfileSpec;
  private readonly clock: NodeClock;
  private readonly scale: number;
  private attached = false;
  private deaf = true;
  private running = false;
  private timers = new Set<unknown>();
  private burst = Buffer.alloc(0);
  private readTimer: unknown = null;
  private readonly lines = new LineSplitter();

  constructor(private readonly o: SerialNodeOptions) {
    if (!PROFILES[o.profile]) throw new TypeError(`SerialNode: profile must be one of ${SERIAL_NODE_PROFILES.join(", ")}, got ${String(o.profile)}`);
    this.spec = PROFILES[o.profile];
    this.clock = o.clock ?? globalClock;
    this.scale = o.timeScale ?? 1;
  }

  get version(): string {
    return this.o.version ?? this.spec.version;
  }

  /** Powers the board up (a reset). Its port may or may not be open yet (`portOpened`). */
  start(): void {
    this.running = true;
    this.reset();
  }

  stop(): void {
    this.running = false;
    for (const t of this.timers) this.clock.clearTimeout(t);
    this.timers.clear();
    this.readTimer = null;
  }

  /** The gateway opened the port: DTR resets the board (unless `resetOnOpen` is false). */
  portOpened(): void {
    this.attached = true;
    if (this.running && (this.o.resetOnOpen ?? true)) this.reset();
  }

  /** The gateway closed the port: what the node sends from now on is lost. */
  portClosed(): void {
    this.attached = false;
  }

  /** Bytes from the gateway. */
  input(chunk: string | Buffer): void {
    const bytes = typeof chunk === "string" ? Buffer.from(chunk, "latin1") : chunk;
    if (!this.running || this.deaf) {
      this.stats.bytesIgnoredDeaf += bytes.length;
      return;
    }
    if (this.spec.reader === "line") {
      this.lines.push(bytes.toString("latin1"), (l) => this.readLine(l), () => undefined);
      return;
    }
    this.burst = Buffer.concat([this.burst, bytes]);
    this.readTimer ??= this.after(READ_DELAY_MS, () => {
      this.readTimer = null;
      this.readBursts();
    });
  }

  /** A reading from a sensor of the node. */
  reading(G: string, D: number, DA: string | number): void {
    this.emit("DEVICE", { G, V: 0, D, DA });
  }

  private reset(): void {
    for (const t of this.timers) this.clock.clearTimeout(t);
    this.timers.clear();
    this.readTimer = null;
    this.burst = Buffer.alloc(0);
    this.deaf = true;
    this.after(NODE_RESET_DEAF_MS * this.scale, () => {
      this.deaf = false;
      this.boot();
    });
  }

  private boot(): void {
    this.stats.boots++;
    const plugged = this.o.plugged ?? [];
    for (const G of ["1", "2", "3"] as const) {
      const dev = plugged.find((p) => p.G === G);
      if (dev) this.emit("PLUGIN", { G, V: 0, D: dev.D, DA: 0 });
      else if (this.spec.bootUnplugEmpty) this.emit("UNPLUG", { G, V: 0, D: 0, DA: 0 });
    }
    if (this.spec.heartbeatMs !== null) this.heartbeat(this.spec.heartbeatMs * this.scale);
  }

  private heartbeat(every: number): void {
    this.after(every, () => {
      for (const D of [1007, 999]) this.emit("DEVICE", { G: "0", V: 0, D, DA: this.leds.get(D) ?? "000000" });
      this.heartbeat(every);
    });
  }

  /** 0.47: what arrived together is read in chunks of at most 128 bytes; each chunk is parsed once. */
  private readBursts(): void {
    while (this.burst.length > 0) {
      const chunk = this.burst.subarray(0, NODE_INPUT_BYTES);
      this.burst = this.burst.subarray(chunk.length);
      this.stats.reads++;
      // A full buffer has no room for the terminator: the parse runs past it and fails.
      if (chunk.length >= NODE_INPUT_BYTES) this.error(1);
      else this.command(firstJsonObject(chunk.toString("latin1")));
    }
  }

  private readLine(line: string): void {
    if (line.trim() === "") return;
    this.stats.reads++;
    if (Buffer.byteLength(line, "latin1") + 1 >= NODE_INPUT_BYTES) return this.error(1);
    this.command(firstJsonObject(line));
  }

  private command(json: unknown): void {
    const dev = deviceOf(json);
    if (!dev) return this.error(1);
    const { G, V, D } = dev;
    let DA = dev.DA;
    if (this.spec.errors && V !== 0) return this.error(2);
    if (D === 1003) {
      if (DA !== "VNO") return this.error(4);
      return this.emit(this.spec.versionFrame, { G, V, D, DA: this.version });
    }
    if (this.spec.errors && !this.spec.actuators.includes(D)) return this.error(3);
    let overflow = false;
    if (typeof DA === "string" && this.spec.daChars !== null && DA.length >= this.spec.daChars) {
      DA = DA.slice(0, this.spec.daChars);
      overflow = true;
    }
    const acted = { G, V, D, DA, ...(overflow ? { overflow } : {}) };
    this.commands.push(acted);
    this.o.onCommand?.(acted);
    if (LED_DS.has(D)) this.leds.set(D, String(DA).toUpperCase());
    this.emit("ACK", { G, V, D, DA: this.ackDa(D, DA) });
  }

  private ackDa(D: number, DA: string | number): string | number {
    if (this.o.profile !== "V12_1.00") return DA;
    if (LED_DS.has(D)) return String(DA).toUpperCase();
    if (D === 1002) return Number(DA);
    return DA;
  }

  private error(code: number): void {
    if (!this.spec.errors) return;
    this.stats.errorsSent++;
    this.send(`${JSON.stringify({ ERROR: [{ CODE: code }] })}\r\n`);
  }

  private emit(kind: string, d: { G: string; V: number; D: number; DA: string | number }): void {
    this.send(`${JSON.stringify({ [kind]: [{ G: d.G, V: d.V, D: d.D, DA: d.DA }] })}\r\n`);
  }

  private send(text: string): void {
    if (!this.attached) {
      this.stats.framesLost++;
      return;
    }
    this.o.write(text);
  }

  private after(ms: number, fn: () => void): unknown {
    const t = this.clock.setTimeout(() => {
      this.timers.delete(t);
      fn();
    }, ms);
    this.timers.add(t);
    return t;
  }
}
