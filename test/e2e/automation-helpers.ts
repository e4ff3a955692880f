/** Small HTTP clients for the automation end-to-end tests (the server: test/helpers/live.ts). */
import { request } from "undici";
import type { LiveServer } from "../helpers/live.js";

export interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
  json<T = unknown>(): T;
}

export async function call(
  method: "GET" | "POST" | "PUT" | "DELETE",
  url: string,
  opts: { json?: unknown; body?: Buffer; headers?: Record<string, string> } = {},
): Promise<Answer> {
  const headers: Record<string, string> = { ...opts.headers };
  let body: string | Buffer | undefined = opts.body;
  if (opts.json !== undefined) {
    headers["content-type"] = "application/json";
    body = JSON.stringify(opts.json);
  }
  const res = await request(url, { method, headers, body });
  const buf = Buffer.from(await res.body.arrayBuffer());
  return { status: res.statusCode, headers: res.headers, body: buf, json: <T>() => JSON.parse(buf.toString()) as T };
}

/** The block side: activation with the user's token, data events and the commands long-poll. */
export class TestBlock {
  token = "";
  constructor(
    private readonly live: LiveServer,
    readonly nodeId: string,
  ) {}

  async activate(): Promise<void> {
    const r = await call("GET", `${this.live.baseUrl}/block/${this.nodeId}/activate?user_access_token=${this.live.token}`);
    this.token = r.json<{ token: string }>().token;
  }

  async data(D: number, DA: string, G = "0"): Promise<void> {
    const r = await call("POST", `${this.live.baseUrl}/block/${this.nodeId}/data`, {
      json: { G, V: 0, D, DA },
      headers: { "x-service-token": this.token },
    });
    if (r.status !== 200) throw new Error(`data event refused: ${r.status} ${r.body.toString()}`);
  }

  async commands(): Promise<{ G: string; V: number; D: number; DA: string; GUID: string }[]> {
    const r = await call("GET", `${this.live.baseUrl}/block/${this.nodeId}/commands`, { headers: { "x-service-token": this.token } });
    return r.json<{ DEVICE: { G: string; V: number; D: number; DA: string; GUID: string }[] }>().DEVICE;
  }
}
