/**
 * Routing of commands from the long-poll: to the link that last reported the device, else to the
 * first link that claims it (`owns`), and commands to a camera (D 1004) to the snapshot source,
 * whose JPEG is uploaded to `{stream_url}/rest/v0/camera/:guid/snapshot`. Delivery is not awaited:
 * a serial command waiting 2 s for its ACK must not hold the long-poll.
 */
import type { Logger } from "pino";
import { type BlockClient, BlockClientError } from "../../protocol/block-client.js";
import { makeGuid } from "../../protocol/guid.js";
import type { Command } from "../../protocol/payloads.js";
import type { CommandTarget } from "./types.js";

/** A camera: takes one JPEG snapshot (gateway/camera implements HTTP URL, command and file sources). */
export interface SnapshotSource {
  take(signal?: AbortSignal): Promise<Uint8Array>;
}

export interface RouterCounters {
  commandsReceived: number;
  commandsDelivered: number;
  commandsFailed: number;
  commandsUnroutable: number;
  snapshots: number;
  snapshotFailures: number;
}

export class CommandRouter {
  readonly counters: RouterCounters = {
    commandsReceived: 0,
    commandsDelivered: 0,
    commandsFailed: 0,
    commandsUnroutable: 0,
    snapshots: 0,
    snapshotFailures: 0,
  };
  /**
   * Snapshot uploads answered 429, for the agent's stats. Not sent again (an upload has no
   * idempotency key, and the user asks for a new snapshot): also counted in `snapshotFailures`.
   */
  throttled = 0;
  private readonly targets = new Map<string, CommandTarget>();
  private readonly owners = new Map<string, string>();

  constructor(
    private readonly nodeId: string,
    private readonly client: BlockClient,
    private readonly token: () => string | null,
    private readonly log: Logger,
    private readonly emit: (event: string, ...args: unknown[]) => void,
    private readonly camera?: SnapshotSource,
  ) {}

  add(target: CommandTarget): void {
    if (this.targets.has(target.name)) throw new TypeError(`BlockAgent: a link named "${target.name}" is already registered`);
    this.targets.set(target.name, target);
  }

  /** `link` reported a reading of the device: commands to it go there. */
  owner(G: string, V: number, D: number, link: string): void {
    this.owners.set(`${G}_${V}_${D}`, link);
  }

  route(cmd: Command): Promise<void> {
    this.counters.commandsReceived++;
    if (cmd.D === 1004 && this.camera) {
      this.emit("command", cmd, "camera");
      void this.snapshot(cmd, this.camera);
      return Promise.resolve();
    }
    const owner = this.owners.get(`${cmd.G}_${cmd.V}_${cmd.D}`);
    const target = (owner ? this.targets.get(owner) : undefined) ?? [...this.targets.values()].find((t) => t.owns(cmd));
    this.emit("command", cmd, target?.name ?? null);
    if (!target) {
      this.counters.commandsUnroutable++;
      this.log.warn({ G: cmd.G, V: cmd.V, D: cmd.D }, "command for a device no link owns: dropped");
      return Promise.resolve();
    }
    target.deliver(cmd).then(
      () => this.counters.commandsDelivered++,
      (err: unknown) => {
        this.counters.commandsFailed++;
        this.log.warn({ link: target.name, G: cmd.G, D: cmd.D, err: (err as Error).message }, "command delivery failed");
      },
    );
    return Promise.resolve();
  }

  private async snapshot(cmd: Command, camera: SnapshotSource): Promise<void> {
    const guid = cmd.GUID || makeGuid({ node: this.nodeId, G: cmd.G, V: cmd.V, D: cmd.D });
    try {
      const image = await camera.take();
      const token = this.token();
      if (!token) throw new Error("no block token");
      await this.client.snapshot(token, guid, image);
      this.counters.snapshots++;
      this.counters.commandsDelivered++;
      this.emit("snapshot", guid, image.byteLength);
    } catch (err) {
      this.counters.snapshotFailures++;
      this.counters.commandsFailed++;
      const throttled = err instanceof BlockClientError && err.throttled;
      if (throttled) this.throttled++;
      this.log.warn({ guid, err: (err as Error).message, ...(throttled ? { retryAfterMs: err.retryAfterMs } : {}) }, throttled ? "snapshot upload throttled by the server (429): dropped" : "snapshot failed");
    }
  }
}
