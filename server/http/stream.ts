/**
 * `GET /rest/v0/stream` upgraded to a WebSocket: the live stream (protocol/stream.ts). The auth hook
 * has resolved the user before the upgrade (a missing or unknown credential is answered 401 and the
 * socket is not upgraded). Each socket bounds what waits to be sent to it: past the hub's
 * `maxBufferedBytes` frames are dropped and counted, and once the client has caught up it gets
 * `{"type":"lag","dropped":n}` before the next frame.
 */
import websocket from "@fastify/websocket";
import type { FastifyInstance, FastifyRequest } from "fastify";
import type { WebSocket } from "ws";
import { STREAM_CLOSE_TOO_MANY, STREAM_MAX_GUIDS, type StreamEvent, frameGuid } from "../../protocol/stream.js";
import { badRequest, notFound } from "../errors.js";
import type { Services } from "../services/index.js";
import type { StreamHub, StreamSink } from "../services/stream/hub.js";
import { userOf } from "./auth.js";
import { clientAddress } from "./client-address.js";
import { doc } from "./openapi/route-doc.js";
import { Type } from "@sinclair/typebox";

/** Frames from clients are not part of the protocol; anything larger than this closes the socket. */
const MAX_CLIENT_FRAME = 1024;

/** The `?guid=G1,G2` filter, or null for every device. */
function guidFilter(q: Record<string, unknown>): Set<string> | null {
  const raw = q.guid;
  if (raw === undefined) return null;
  const text = Array.isArray(raw) ? raw.join(",") : String(raw);
  const guids = text.split(",").filter((g) => g !== "");
  if (guids.length === 0) throw badRequest("guid: give one or more device GUIDs separated by commas");
  if (guids.length > STREAM_MAX_GUIDS) throw badRequest(`guid: at most ${STREAM_MAX_GUIDS} GUIDs, got ${guids.length}`);
  const long = guids.find((g) => g.length > 256);
  if (long !== undefined) throw badRequest(`guid: "${long.slice(0, 40)}…" is longer than 256 characters`);
  return new Set(guids);
}

class SocketSink implements StreamSink {
  private dropped = 0;
  private alive = true;

  constructor(
    private readonly ws: WebSocket,
    private readonly hub: StreamHub,
    readonly userId: number,
    readonly address: string | null,
    private readonly guids: Set<string> | null,
  ) {
    ws.on("pong", () => {
      this.alive = true;
    });
  }

  deliver(frames: readonly StreamEvent[], texts: readonly string[]): void {
    frames.forEach((f, i) => {
      if (this.guids) {
        const guid = frameGuid(f);
        if (guid === undefined || !this.guids.has(guid)) return;
      }
      this.send(texts[i] as string);
    });
  }

  private send(text: string): void {
    if (this.ws.readyState !== this.ws.OPEN) return;
    if (this.ws.bufferedAmount > this.hub.maxBufferedBytes) {
      this.dropped++;
      this.hub.stats.dropped++;
      return;
    }
    this.flushLag();
    // Written to the kernel: a good moment to tell a client that has caught up what it missed.
    this.ws.send(text, () => this.flushLag());
    if (this.ws.bufferedAmount > this.hub.stats.maxBuffered) this.hub.stats.maxBuffered = this.ws.bufferedAmount;
  }

  private flushLag(): void {
    if (this.dropped === 0 || this.ws.readyState !== this.ws.OPEN || this.ws.bufferedAmount > this.hub.maxBufferedBytes / 2) return;
    const n = this.dropped;
    this.dropped = 0;
    this.ws.send(JSON.stringify({ type: "lag", dropped: n }));
  }

  heartbeat(): void {
    if (!this.alive) {
      this.ws.terminate();
      return;
    }
    this.alive = false;
    this.flushLag();
    this.ws.ping();
  }

  close(code: number, reason: string): void {
    this.ws.close(code, reason);
  }
}

/**
 * Every WebSocket handshake on the API listener goes through fastify's routing; one that was
 * answered with an HTTP status instead of upgraded (401, 404, 429…) would otherwise keep its socket,
 * which no HTTP parser owns any more, open for ever (and hold up the server's close).
 */
export function closeRefusedUpgrades(app: FastifyInstance): void {
  app.addHook("onResponse", function closeRefusedUpgrade(request, _reply, done) {
    if (request.headers.upgrade !== undefined) request.raw.socket.destroy();
    done();
  });
}

export function streamRoutes(app: FastifyInstance, s: Services): void {
  void app.register(async (scope) => {
    await scope.register(websocket, {
      options: { maxPayload: MAX_CLIENT_FRAME },
      // A client that vanishes mid-frame is not a server error.
      errorHandler: (err, socket, request) => {
        request.log.debug({ err }, "live stream socket error");
        socket.terminate();
      },
    });
    // Refusals before the upgrade are plain HTTP answers with the envelope: 400, 404, 429 or 503.
    const preHandler = async (request: FastifyRequest): Promise<void> => {
      // @fastify/websocket answers a request that is no handshake 404 with an empty body: the envelope instead.
      if (!request.ws) throw notFound("GET /rest/v0/stream is a WebSocket: open it with a handshake (Upgrade: websocket)");
      guidFilter(request.query as Record<string, unknown>);
      s.stream.check(userOf(request).userId);
    };
    const schema = doc({
      tag: "Live stream",
      summary: "Live stream of your events (WebSocket)",
      description:
        "A WebSocket handshake (`Upgrade: websocket`); a request without one gets 404 with the envelope. One JSON object per text frame, " +
        "about your own resources only: `{type:\"data\", guid, DA, timestamp}` (a stored reading), `{type:\"config\", " +
        "guid, config, timestamp}`, `{type:\"device\", guid, change}` (created, updated, deleted), `{type:\"block\", " +
        "nodeId, change}` (claimed, unpaired, awaiting), `{type:\"rule\", rid, ok, timestamp}` (a rule ran). " +
        `\`?guid=G1,G2\` (at most ${STREAM_MAX_GUIDS}) narrows the data and config frames to those devices. A socket ` +
        "that cannot keep up has frames dropped, then gets `{type:\"lag\", dropped}` once it has caught up. The server " +
        "pings every 30 s and closes a socket that did not answer the previous ping; what clients send is ignored " +
        `(frames over 1 KiB close the socket). Over the per-user cap (10 sockets) the handshake is refused with 429, or ` +
        `a socket that lost the race is closed with code ${STREAM_CLOSE_TOO_MANY}. Signed in by the session cookie, the ` +
        "handshake must come from this server's own pages (Origin).",
      ok: { 101: { description: "Switching Protocols: the WebSocket is open.", empty: true } },
      errors: {
        400: "The guid filter is empty, names more than 100 GUIDs, or one longer than 256 characters.",
        403: "Signed in by the session cookie, from a page of another origin.",
        404: "Not a WebSocket handshake.",
        429: "You have as many live streams open as allowed (10), or the server does (10,000): Retry-After is one ping interval (30 s). Or too many requests with the credential.",
      },
      query: Type.Object({ guid: Type.Optional(Type.String({ description: "comma-separated device GUIDs" })) }),
    });
    scope.get("/stream", { websocket: true, config: { auth: "user" }, preHandler, schema }, (ws, request) => {
      const sink = new SocketSink(ws, s.stream, userOf(request).userId, clientAddress(s, request), guidFilter(request.query as Record<string, unknown>));
      let detach: () => void;
      try {
        detach = s.stream.attach(sink);
      } catch (err) {
        // Another socket of the user took the last place since the check.
        ws.close(STREAM_CLOSE_TOO_MANY, err instanceof Error ? err.message.slice(0, 120) : "too many live streams");
        return;
      }
      ws.on("close", detach);
      // Nothing is expected from clients; what they send (a keep-alive text) is ignored.
      ws.on("message", () => {});
    });
  });
}
