/**
 * Camera snapshots (DESIGN.md "Camera"). A user's GET sends DA "1" to the camera device (D 1004)
 * and waits for the block's upload; the upload is kept in the store (the latest per camera) and
 * its sequence number is announced on the Bus, so a waiter in another process wakes and reads it
 * from the shared store. No upload within the timeout: 504.
 */
import type { Logger } from "pino";
import { D } from "../../../protocol/device-types.js";
import { parseGuid } from "../../../protocol/guid.js";
import type { Bus } from "../../bus/types.js";
import { badRequest, forbidden, notFound, timeout, unavailable } from "../../errors.js";
import type { DeviceRow, Store } from "../../store/types.js";
import type { AuthService } from "../auth.js";
import type { DeviceService } from "../devices.js";

export interface Snapshot {
  guid: string;
  contentType: string;
  body: Buffer;
  at: number;
}

export interface CameraOptions {
  /** How long a snapshot request waits for the block's upload, ms. Default 10 000. */
  timeoutMs?: number;
}

const channel = (deviceId: number): string => `snap:${deviceId}`;

export class CameraService {
  private readonly timeoutMs: number;
  /** camera device id -> when a snapshot command was last sent, to send one per burst of requests. */
  private readonly asked = new Map<number, number>();
  private readonly waiters = new Set<() => void>();
  private stopped = false;

  constructor(
    private readonly store: Store,
    private readonly bus: Bus,
    private readonly auth: AuthService,
    private readonly devices: DeviceService,
    private readonly log: Logger,
    options: CameraOptions = {},
    private readonly clock: () => number = Date.now,
  ) {
    this.timeoutMs = options.timeoutMs ?? 10_000;
  }

  /** Ends every waiting request (with 503) and refuses new ones. */
  stop(): void {
    this.stopped = true;
    for (const w of [...this.waiters]) w();
  }

  /** The user's camera device or a 4xx naming the problem. */
  async camera(userId: number, guid: string): Promise<DeviceRow> {
    const row = await this.devices.owned(userId, guid);
    if (row.v !== 0 || row.d !== D.camera) throw badRequest(`device ${guid} is not a camera (D ${D.camera})`);
    return row;
  }

  /** Asks the camera for a picture and resolves with the next upload. */
  async snapshot(userId: number, guid: string, signal?: AbortSignal): Promise<Snapshot> {
    if (this.stopped) throw unavailable("the server is shutting down");
    const cam = await this.camera(userId, guid);
    let finish: (err: Error | null, seq?: number) => void = () => {};
    const done = new Promise<number>((resolve, reject) => {
      finish = (err, seq) => (err ? reject(err) : resolve(seq as number));
    });
    // Listen before asking, so that a fast upload is not missed.
    const unsubscribe = this.bus.subscribe(channel(cam.id), (message) => finish(null, Number(message)));
    const timer = setTimeout(() => finish(timeout(`no snapshot from camera ${guid} within ${this.timeoutMs / 1000} s`)), this.timeoutMs);
    const onStop = (): void => finish(unavailable("the server is shutting down"));
    const onAbort = (): void => finish(unavailable("the snapshot request was abandoned"));
    this.waiters.add(onStop);
    signal?.addEventListener("abort", onAbort, { once: true });
    try {
      const now = this.clock();
      const last = this.asked.get(cam.id);
      if (last === undefined || now - last >= this.timeoutMs) {
        this.asked.set(cam.id, now);
        await this.devices.actuate(cam, "1");
      }
      await done;
      const row = await this.store.snapshots.get(cam.id);
      if (!row) throw notFound(`camera ${guid} has no snapshot`);
      return { guid, contentType: row.content_type, body: row.body, at: row.created };
    } catch (err) {
      this.asked.delete(cam.id);
      throw err;
    } finally {
      clearTimeout(timer);
      unsubscribe();
      this.waiters.delete(onStop);
      signal?.removeEventListener("abort", onAbort);
    }
  }

  /**
   * Checks an upload before its body is read: the camera must exist and belong to the block whose
   * token is given (or to the owner of the virtual block token on the camera's node).
   */
  async authorizeUpload(guid: string, token: string | undefined): Promise<DeviceRow> {
    const addr = parseGuid(guid);
    if (!addr) throw badRequest(`"${guid}" is not a device GUID`);
    const principal = await this.auth.block(token, addr.node);
    const cam = await this.store.devices.byGuid(guid);
    if (!cam || cam.user_id !== principal.userId) throw forbidden(`camera ${guid} does not belong to this block`);
    if (cam.v !== 0 || cam.d !== D.camera) throw badRequest(`device ${guid} is not a camera (D ${D.camera})`);
    return cam;
  }

  /** Stores an upload and wakes every waiter of the camera. */
  async upload(cam: DeviceRow, contentType: string, body: Buffer): Promise<void> {
    if (body.length === 0) throw badRequest("the snapshot body is empty");
    const seq = await this.store.snapshots.put(cam.id, contentType, body, this.clock());
    this.asked.delete(cam.id);
    this.log.debug({ guid: cam.guid, bytes: body.length, seq }, "snapshot uploaded");
    this.bus.publish(channel(cam.id), String(seq));
  }
}
