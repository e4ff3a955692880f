/** Block-level calls: heartbeat, data, config events and the commands long-poll. */
import type { FastifyInstance, FastifyRequest } from "fastify";
import { ok } from "../../protocol/envelope.js";
import { deviceType } from "../../protocol/device-types.js";
import { makeGuid } from "../../protocol/guid.js";
import { numericValue } from "../../protocol/history.js";
import {
  ConfigEvent,
  DataEvent,
  type DataEvent as DataEventBody,
  HeartbeatBody,
  NodeIdParam,
  daText,
} from "../../protocol/payloads.js";
import { toCommand } from "../services/commands.js";
import type { Services } from "../services/index.js";
import type { CommandRow, IngestEvent } from "../store/types.js";
import type { BlockPrincipal } from "../services/auth.js";
import { blockOf, isConstrainedClient } from "./auth.js";
import { onClientGone } from "./client-gone.js";
import { type RouteDoc, doc } from "./openapi/route-doc.js";
import { Commands } from "../../protocol/responses.js";

const LANE =
  "\n\n**Fast lane.** With a block token the server has cached and a plainly valid JSON body, this route is " +
  "answered before fastify's routing (server/http/fast-ingest.ts), with the same answers; anything else (a query " +
  "string, another content type, a body the strict check refuses) is replayed through the route as documented here.";
const FIELDS =
  "`G` a string or number (stored as a string); `V` and `D` non-negative integers up to 999,999,999 as a JSON number " +
  "or a string of digits; `DA` a string (up to 4096 characters) or a number. Extra fields are accepted; two have a " +
  "meaning: `TIMESTAMP` (epoch ms, at most 5 minutes ahead of the server's clock) dates a buffered reading, and `KEY` " +
  "(up to 128 characters) is an idempotency key: a reading whose key the server stored for the node within its " +
  "idempotency retention (7 days unless the server runs with --idempotency-retention) is acknowledged again but not stored twice. An event for a device the server does not know creates it.";
const eventDoc = (d: Pick<RouteDoc, "summary" | "description"> & Partial<RouteDoc>) =>
  doc({ tag: "Block events", ok: { 200: { description: "Committed to disk." } }, ...d, description: d.description + LANE });

/** The most a constrained client (the Arduino Ethernet block library) reads of an answer's body, bytes. */
export const CONSTRAINED_BODY_BYTES = 128;

/**
 * The answer for a constrained client: one command, keys in the order G, V, D, DA (its string
 * matching needs a comma after D and a quoted DA), no GUID. Returns the body and the commands it
 * consumed: the one sent, and before it any that could never fit (they are dropped, not retried).
 */
export function constrainedAnswer(rows: CommandRow[]): { body: string; sent: CommandRow[]; dropped: CommandRow[] } {
  const dropped: CommandRow[] = [];
  for (const r of rows) {
    const body = JSON.stringify({ DEVICE: [{ G: r.g, V: r.v, D: r.d, DA: String(r.da) }] });
    if (Buffer.byteLength(body) <= CONSTRAINED_BODY_BYTES) return { body, sent: [r], dropped };
    dropped.push(r);
  }
  return { body: JSON.stringify({ DEVICE: [] }), sent: [], dropped };
}

/**
 * The number stored beside a reading for folding: only for device types whose DA is a quantity
 * (and for unknown types, when it parses), so that codes like an RF bit string `0101…` stay text.
 */
function storedNumber(v: number, d: number, da: string): number | null {
  const t = deviceType(v, d);
  return t.numeric || t.device_type === "unknown" ? numericValue(da) : null;
}

/** Readings may be stamped by the block up to this far in the future (clock skew), ms. */
const MAX_FUTURE_SKEW_MS = 5 * 60_000;

/** One validated event body as the store's ingest event. Shared with the fast lane (fast-ingest.ts). */
export function toEvent(b: BlockPrincipal, kind: IngestEvent["kind"], e: DataEventBody, now: number): IngestEvent {
  const G = String(e.G);
  const DA = kind === "config" ? String((e as unknown as { type: string }).type) : daText(e.DA);
  // V and D arrive as numbers or strings of digits (payloads.ts WIRE_INTEGER).
  const V = Number(e.V);
  const D = Number(e.D);
  let ts = now;
  if (e.TIMESTAMP !== undefined && e.TIMESTAMP <= now + MAX_FUTURE_SKEW_MS) ts = e.TIMESTAMP;
  return {
    kind,
    userId: b.userId,
    node: b.nodeId,
    guid: makeGuid({ node: b.nodeId, G, V, D }),
    G,
    V,
    D,
    DA,
    num: kind === "config" ? null : storedNumber(V, D, DA),
    ts,
    key: e.KEY,
    payload: kind === "config" ? (e as unknown as Record<string, unknown>) : undefined,
  };
}

export function blockEventRoutes(app: FastifyInstance, s: Services): void {
  const block = { auth: "block" as const };
  const event = (request: FastifyRequest, kind: IngestEvent["kind"], e: DataEventBody, now: number): IngestEvent =>
    toEvent(blockOf(request), kind, e, now);

  app.post(
    "/block/:nodeId/heartbeat",
    {
      config: block,
      schema: {
        ...eventDoc({
          summary: "Heartbeat: readings to analyse (deprecated)",
          description:
            "An array of 1 to 1000 readings, even for one device. Each updates the device's last value, is stored for " +
            `history, and drives rules and callbacks, like a data event. Acknowledged once committed to disk. ${FIELDS}`,
          deprecated: true,
        }),
        params: NodeIdParam,
        body: HeartbeatBody,
      },
    },
    async (request) => {
    const now = s.clock();
    await s.ingest.submit((request.body as DataEventBody[]).map((e) => event(request, "heartbeat", e, now)));
    return ok();
  });

  app.post(
    "/block/:nodeId/data",
    {
      config: block,
      schema: {
        ...eventDoc({
          summary: "Data: a reading to act on now",
          description:
            "One reading (a button press, a temperature). Updates the device's last value, is stored for history, fires " +
            "rules and callbacks, and is acknowledged only once committed to disk (group commit: concurrent events share " +
            `one transaction). ${FIELDS}`,
        }),
        params: NodeIdParam,
        body: DataEvent,
      },
    },
    async (request) => {
    await s.ingest.submit([event(request, "data", request.body as DataEventBody, s.clock())]);
    return ok();
  });

  app.post(
    "/block/:nodeId/config",
    {
      config: block,
      schema: {
        ...eventDoc({
          summary: "Config: meta information about a device",
          description:
            "`type` is any string. Kept in the device's `meta`: `meta.plugged` is false after `UNPLUG` and true after " +
            "`PLUGIN`; any other type is kept as `meta.config.<type>` with its payload and time. Not a history reading, " +
            "fires no rule. An `UNPLUG` for a device the server has never seen creates nothing (old firmware sends one " +
            "for each empty port at boot).",
        }),
        params: NodeIdParam,
        body: ConfigEvent,
      },
    },
    async (request) => {
    await s.ingest.submit([event(request, "config", request.body as DataEventBody, s.clock())]);
    return ok();
  });

  // No HEAD twin: a HEAD would take the commands off the queue and drop the body that carries them.
  app.get(
    "/block/:nodeId/commands",
    {
      config: block,
      schema: {
        ...doc({
          tag: "Block events",
          summary: "Long-poll for commands",
          description:
            "Answers at once with every queued command, oldest first; otherwise holds up to 30 s (`--poll-hold`) and " +
            "answers the first command that arrives, or `{\"DEVICE\":[]}` when the hold ends. A command leaves the queue " +
            "only once the answer carrying it was written; one not delivered within 60 s expires instead of actuating " +
            "late. A newer poll for the same node answers the older one with an empty list. The answer is not the " +
            "envelope. A client whose User-Agent starts with `Ninja Arduino` (the original Arduino Ethernet library, " +
            "which reads 128 bytes) gets one command per answer, without `GUID`, with `Connection: close`. No HEAD: it " +
            "would take commands off the queue.",
          ok: { 200: { description: "The commands (possibly none).", body: Commands } },
        }),
        params: NodeIdParam,
      },
      exposeHeadRoute: false,
    },
    async (request, reply) => {
    const { nodeId } = blockOf(request);
    const polled = await s.commands.poll(nodeId, (cancel) => onClientGone(reply, cancel));
    let rows = polled;
    let constrained: string | null = null;
    if (isConstrainedClient(request.headers)) {
      // One command per answer; the rest stay queued for its next polls, in order.
      const a = constrainedAnswer(polled);
      // It closes after each answer anyway; closing here too means a missed answer (an error one
      // included) never leaves it waiting on a kept-alive socket.
      reply.header("connection", "close");
      for (const r of a.dropped) {
        request.log.warn({ guid: r.guid, bytes: r.da.length }, "command too long for a Ninja Arduino client's 128-byte read: dropped");
      }
      const rest = polled.filter((r) => !a.sent.includes(r) && !a.dropped.includes(r));
      if (a.dropped.length > 0) {
        try {
          await s.commands.delivered(a.dropped);
        } catch (err) {
          // This answer is an error: what it would have carried goes to the next poll, in order.
          s.commands.lost([...a.sent, ...rest]);
          throw err;
        }
      }
      s.commands.lost(rest);
      rows = a.sent;
      constrained = a.body;
    }
    if (rows.length > 0) {
      // Removed from the queue only once the response carrying them was written.
      reply.raw.once("finish", () => {
        s.commands.delivered(rows).catch((err: unknown) => request.log.error({ err }, "removing delivered commands failed"));
      });
      reply.raw.once("close", () => {
        if (!reply.raw.writableFinished) s.commands.lost(rows);
      });
    }
    if (constrained !== null) return reply.type("application/json").send(constrained);
    return reply.send({ DEVICE: rows.map(toCommand) });
  });
}
