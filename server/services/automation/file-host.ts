/**
 * File Host targets (the sendToFileHost action). A File Host device (D 104) keeps its target in its
 * meta as `target`, set with PUT /device/:guid/filehost:
 * - `http://…` or `https://…`: the file is sent with PUT to `<target>/<file name>`;
 * - otherwise a relative directory such as `snapshots` or `camera/front`, inside the server's
 *   files directory (`<data dir>/files/<user id>/`), so that users can never write elsewhere.
 */
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { Logger } from "pino";
import type { Dispatcher } from "undici";
import { badRequest, unavailable } from "../../errors.js";
import type { DeviceRow } from "../../store/types.js";
import type { Snapshot } from "./camera.js";
import { redactTarget, send } from "./http-out.js";

const DIRECTORY = /^[A-Za-z0-9_-][A-Za-z0-9._-]*(\/[A-Za-z0-9_-][A-Za-z0-9._-]*)*$/;

/** Checks a target; throws a 400 naming the problem. */
export function checkTarget(target: string): string {
  if (/^https?:\/\//.test(target)) {
    try {
      new URL(target);
      return target;
    } catch {
      throw badRequest(`target "${target}" is not a valid URL`);
    }
  }
  if (target.length > 256 || !DIRECTORY.test(target) || target.split("/").some((s) => s === "." || s === "..")) {
    throw badRequest("target must be an http(s) URL or a relative directory of letters, digits, '.', '_', '-' and '/' (no '..')");
  }
  return target;
}

export function targetOf(device: DeviceRow): string | null {
  return typeof device.meta.target === "string" ? device.meta.target : null;
}

export class FileHost {
  constructor(
    private readonly filesDir: string,
    private readonly options: { timeoutMs: number; dispatcher?: Dispatcher | undefined },
    private readonly log?: Logger,
  ) {}

  /** Stores the snapshot at the device's target; resolves with where it went. */
  async store(device: DeviceRow, name: string, snap: Snapshot, signal: AbortSignal): Promise<string> {
    const target = targetOf(device);
    if (target === null) throw badRequest(`File Host ${device.guid} has no target: set one with PUT /device/${device.guid}/filehost`);
    checkTarget(target);
    if (/^https?:\/\//.test(target)) {
      const url = `${target.replace(/\/+$/, "")}/${encodeURIComponent(name)}`;
      try {
        const r = await send("PUT", url, snap.body, snap.contentType, { ...this.options, signal });
        if (r.status < 200 || r.status > 299) throw new Error(`answered ${r.status}`);
      } catch (err) {
        if (signal.aborted) throw err;
        this.log?.warn({ target: redactTarget(url), err: (err as Error).message }, "file host PUT failed");
        // One text whatever went wrong (refused, silent, HTTP error, refused by the outbound policy):
        // a rule's history must not tell its owner which ports are open on the server's network.
        throw unavailable(`PUT ${redactTarget(url)}: the call failed (no 2xx answer within ${this.options.timeoutMs} ms)`, err);
      }
      return `stored ${name} at ${redactTarget(url)}`;
    }
    const dir = join(this.filesDir, String(device.user_id), target);
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, name), snap.body);
    return `stored ${name} in ${target}/`;
  }
}
