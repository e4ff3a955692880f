/**
 * The live stream (docs/dashboard.md): a WebSocket at `{auth_url}/rest/v0/stream`, one JSON object
 * per text frame, about the signed-in user's own resources only. The server and every client (the
 * dashboard pages, `blockkit watch`) import these shapes instead of restating them.
 */

/** Path of the stream on the API listener. */
export const STREAM_PATH = "/rest/v0/stream";
/** The server pings every socket this often; one that has not answered the previous ping is closed. */
export const STREAM_PING_MS = 30_000;
/** Most GUIDs one `?guid=` filter may name. */
export const STREAM_MAX_GUIDS = 100;
/** WebSocket close code sent when the user already has as many sockets as allowed (1008: policy violation). */
export const STREAM_CLOSE_TOO_MANY = 1008;

/** A stored data or heartbeat reading. `DA` is shown as in `last_data` (a number for numeric types). */
export interface DataFrame {
  type: "data";
  guid: string;
  DA: string | number;
  /** Epoch ms of the reading. */
  timestamp: number;
  /** Present when DA was too long for one bus message and is cut short: read the device for all of it. */
  truncated?: true;
}

/** A config event (PLUGIN, UNPLUG, or any other type string), with the block's whole payload. */
export interface ConfigFrame {
  type: "config";
  guid: string;
  /** The config payload as the block sent it; at least `{type}`. */
  config: Record<string, unknown>;
  timestamp: number;
  /** Present when the payload was too large for one bus message: `config` is then `{type}` alone. */
  truncated?: true;
}

export type DeviceChange = "created" | "updated" | "deleted";
/** A device appeared, was renamed or had its sub-devices changed, or was deleted. */
export interface DeviceFrame {
  type: "device";
  guid: string;
  change: DeviceChange;
}

export type BlockChange = "claimed" | "unpaired" | "awaiting";
/**
 * A block was claimed or unpaired, or a block started awaiting activation: one of the user's own,
 * or an unclaimed one asking from the same network address as this socket.
 */
export interface BlockFrame {
  type: "block";
  nodeId: string;
  change: BlockChange;
}

/** A rule ran (after its run was recorded in its history). */
export interface RuleFrame {
  type: "rule";
  rid: number;
  ok: boolean;
  /** Epoch ms when the rule fired. */
  timestamp: number;
}

/** The socket could not keep up: `dropped` frames were not sent since the previous lag frame. */
export interface LagFrame {
  type: "lag";
  dropped: number;
}

/** Frames about resources (what travels on the server's bus). */
export type StreamEvent = DataFrame | ConfigFrame | DeviceFrame | BlockFrame | RuleFrame;
/** Every frame a client may receive. */
export type StreamFrame = StreamEvent | LagFrame;

const TYPES = new Set(["data", "config", "device", "block", "rule", "lag"]);

/** Parses one text frame; throws a TypeError naming what is wrong (a client older than the server). */
export function parseStreamFrame(text: string): StreamFrame {
  const v = JSON.parse(text) as unknown;
  if (typeof v !== "object" || v === null || Array.isArray(v)) throw new TypeError("stream frame is not a JSON object");
  const type = (v as { type?: unknown }).type;
  if (typeof type !== "string" || !TYPES.has(type)) throw new TypeError(`stream frame of unknown type ${JSON.stringify(type)}`);
  return v as StreamFrame;
}

/** The frame's GUID (data, config and device frames), else undefined. */
export function frameGuid(f: StreamFrame): string | undefined {
  return f.type === "data" || f.type === "config" || f.type === "device" ? f.guid : undefined;
}

export interface StreamUrlOptions {
  /** A personal access token (`user_access_token`). */
  userToken?: string;
  /** An OAuth access token (`access_token`). */
  accessToken?: string;
  /** Only frames about these devices. */
  guids?: string[];
}

/** The `ws://` (or `wss://`) address of the stream of a server whose `{auth_url}` is given. */
export function streamAddress(authUrl: string, o: StreamUrlOptions = {}): string {
  const u = new URL(STREAM_PATH, authUrl);
  u.protocol = u.protocol === "https:" ? "wss:" : "ws:";
  if (o.userToken) u.searchParams.set("user_access_token", o.userToken);
  if (o.accessToken) u.searchParams.set("access_token", o.accessToken);
  if (o.guids && o.guids.length > 0) u.searchParams.set("guid", o.guids.join(","));
  return u.toString();
}
