/** /block: activation (two-legged and direct), claim, list, get, unpair. */
import type { FastifyInstance } from "fastify";
import { ok } from "../../protocol/envelope.js";
import { ClaimBody, NodeIdParam } from "../../protocol/payloads.js";
import { notFound } from "../errors.js";
import type { Services } from "../services/index.js";
import type { BlockRow } from "../store/types.js";
import { userOf } from "./auth.js";
import { onClientGone } from "./client-gone.js";

function blockJson(b: BlockRow): { date_created: number; last_active: number; short_name: string } {
  return { date_created: b.date_created, last_active: b.last_active, short_name: b.short_name };
}

export function blockRoutes(app: FastifyInstance, s: Services): void {
  const user = { auth: "user" as const };

  app.get("/block", { config: user }, async (request) => {
    const rows = await s.store.blocks.list(userOf(request).userId);
    const out: Record<string, ReturnType<typeof blockJson>> = {};
    for (const b of rows) out[b.node_id] = blockJson(b);
    return ok(out);
  });

  app.post("/block", { config: user, schema: { body: ClaimBody } }, async (request) => {
    const { nodeid } = request.body as { nodeid: string };
    await s.activation.claim(nodeid, userOf(request).userId);
    return ok();
  });

  // An extension of the spec for the dashboard and the CLI: blocks awaiting activation that this
  // user may claim (Activation.awaitingFor). "awaiting" is no node id (those have 12+ characters).
  app.get("/block/awaiting", { config: user }, async (request) => {
    const list = await s.activation.awaitingFor(userOf(request).userId, request.ip);
    return ok(list.map((a) => ({ nodeid: a.nodeId, since: a.since })));
  });

  app.get("/block/:nodeId", { config: user, schema: { params: NodeIdParam } }, async (request) => {
    const { nodeId } = request.params as { nodeId: string };
    const b = await s.store.blocks.get(nodeId);
    if (!b || b.user_id !== userOf(request).userId) throw notFound(`unknown block ${nodeId}`);
    return ok(blockJson(b));
  });

  app.delete("/block/:nodeId", { config: user, schema: { params: NodeIdParam } }, async (request) => {
    const { nodeId } = request.params as { nodeId: string };
    const userId = userOf(request).userId;
    const b = await s.store.blocks.get(nodeId);
    if (!b || b.user_id !== userId) throw notFound(`unknown block ${nodeId}`);
    const gone = (await s.store.devices.list(userId)).filter((d) => d.node_id === nodeId);
    s.auth.forget(await s.store.blocks.remove(nodeId));
    s.ingest.forgetBlock(nodeId);
    for (const d of gone) s.events.device(userId, d.guid, "deleted");
    s.events.block(userId, nodeId, "unpaired");
    return ok();
  });

  // No credential: the block waits here until a user claims it. With a user credential in the
  // query, the direct flow claims and answers at once.
  // No HEAD twin: a HEAD would issue (and so revoke the previous) token in a body nobody reads.
  app.get("/block/:nodeId/activate", { schema: { params: NodeIdParam }, exposeHeadRoute: false }, async (request, reply) => {
    const { nodeId } = request.params as { nodeId: string };
    const q = request.query as Record<string, unknown>;
    if (q.user_access_token !== undefined || q.access_token !== undefined) {
      const principal = await s.auth.user(q);
      s.rateLimiter.take(principal.tokenHash);
      return reply.send({ token: await s.activation.direct(nodeId, principal.userId) });
    }
    const token = await s.activation.wait(nodeId, (cancel) => onClientGone(reply, cancel), request.ip);
    if (token === null) return reply.code(204).send();
    return reply.send({ token });
  });
}
