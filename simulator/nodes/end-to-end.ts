/**
 * End-to-end latencies of nodes behind a gateway, seen from the server (`blockkit sim nodes` with
 * `--server`, `--token` and `--gateway-node-id`), whatever the nodes speak (MQTT or serial frames):
 * node reading -> visible on the server (the live stream's data frame of the device) and command
 * PUT -> command at the node. The nodes say when they sent a reading and when a command arrived;
 * this class follows the stream and sends the commands.
 */
import WebSocket from "ws";
import type { ApiClient } from "../../protocol/api-client.js";
import { makeGuid } from "../../protocol/guid.js";
import { parseStreamFrame, streamAddress } from "../../protocol/stream.js";
import { Latency } from "../metrics/histogram.js";
import { Random } from "../random.js";

export interface NodesServer {
  api: ApiClient;
  /** The server's root (`{auth_url}`), for the live stream. */
  authUrl: string;
  token: string;
  /** The node id of the gateway the nodes are behind: its devices are `<id>_<G>_<V>_<D>`. */
  gatewayNodeId: string;
}

/** An actuator the commands go to: its GUID on the server and its value now (commands toggle it). */
export interface CommandTarget {
  guid: string;
  value(): string | null;
}

export class EndToEnd {
  readonly visible = new Latency();
  readonly command = new Latency();
  commandsSent = 0;
  /** Readings not yet seen on the server, per GUID, oldest first: when sent, and their value. */
  private readonly unseen = new Map<string, { at: number; value: string }[]>();
  private readonly commandsAt = new Map<string, number>();
  /** Devices the server has: commands go only to these (a PUT before the PLUGIN arrived is a 404). */
  private readonly known = new Set<string>();
  private stream: WebSocket | null = null;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly server: NodesServer,
    private readonly error: (text: string) => void,
  ) {}

  /** The GUID on the server of a node's device behind the gateway. */
  guid(d: { G: string; V: number; D: number }): string {
    return makeGuid({ node: this.server.gatewayNodeId, G: d.G, V: d.V, D: d.D });
  }

  /** Follows the server's live stream: a data frame of a device ends its oldest unseen reading. */
  start(): Promise<void> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(streamAddress(this.server.authUrl, { userToken: this.server.token }), { handshakeTimeout: 10_000 });
      ws.once("open", () => {
        this.stream = ws;
        resolve();
      });
      ws.once("error", (err) => (this.stream ? this.error(`live stream: ${err.message}`) : reject(new Error(`live stream of ${this.server.authUrl}: ${err.message}`))));
      ws.on("message", (data, binary) => {
        if (binary) return;
        let frame;
        try {
          frame = parseStreamFrame(String(data));
        } catch {
          return;
        }
        if (frame.type === "data" || frame.type === "config" || (frame.type === "device" && frame.change !== "deleted")) this.known.add(frame.guid);
        if (frame.type === "data") this.seen(frame.guid, frame.DA);
      });
    });
  }

  /** A node sent a reading of `guid` now. */
  sent(guid: string, value: string): void {
    if (!this.stream) return;
    const q = this.unseen.get(guid) ?? [];
    q.push({ at: Date.now(), value });
    this.unseen.set(guid, q);
  }

  /**
   * The server shows a reading of `guid`: the oldest unseen one of that value. The ones before it
   * never arrived (a serial line drops what a gateway not yet reading is sent), so they are
   * dropped rather than matched with later readings; a value the nodes did not send is ignored.
   */
  private seen(guid: string, DA: string | number): void {
    const q = this.unseen.get(guid);
    if (!q) return;
    const same = (v: string): boolean => v === String(DA) || (v.trim() !== "" && Number(v) === Number(DA));
    const i = q.findIndex((r) => same(r.value));
    if (i < 0) return;
    const [r] = q.splice(0, i + 1).slice(-1);
    if (r) this.visible.record(Date.now() - r.at);
  }

  /** A command reached the node's device `guid`. */
  arrived(guid: string): void {
    const at = this.commandsAt.get(guid);
    if (at === undefined) return;
    this.command.record(Date.now() - at);
    this.commandsAt.delete(guid);
  }

  /**
   * PUTs `rate` commands a second to random actuators, one in flight per device, toggling 0 and 1,
   * once the server has the device (it had it at the start, or the stream showed it since).
   */
  sendCommands(actuators: CommandTarget[], rate: number, seed: number): void {
    if (rate <= 0 || actuators.length === 0) return;
    this.server.api.devices().then(
      (devices) => {
        for (const guid of Object.keys(devices)) this.known.add(guid);
      },
      (err: unknown) => this.error(`devices: ${(err as Error).message}`),
    );
    const rng = new Random(seed).child("commands");
    this.timer = setInterval(() => {
      const d = rng.pick(actuators);
      if (this.commandsAt.has(d.guid) || !this.known.has(d.guid)) return;
      this.commandsAt.set(d.guid, Date.now());
      this.commandsSent++;
      this.server.api.actuate(d.guid, d.value() === "1" ? "0" : "1").catch((err: unknown) => {
        this.commandsAt.delete(d.guid);
        this.error(`command to ${d.guid}: ${(err as Error).message}`);
      });
    }, 1000 / rate);
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.stream?.close();
  }
}
