/** /block: activation (two-legged and direct), claim, list, get, unpair. */
import type { FastifyInstance } from "fastify";
import { ok } from "../../protocol/envelope.js";
import { ClaimBody, NodeIdParam } from "../../protocol/payloads.js";
import { notFound } from "../errors.js";
import type { Services } from "../services/index.js";
import type { BlockRow } from "../store/types.js";
import { userOf } from "./auth.js";
import { onClientGone } from "./client-gone.js";
import { clientAddress } from "./client-address.js";
import { doc } from "./openapi/route-doc.js";
import { AwaitingBlocks, Block, BlockMap, BlockToken } from "../../protocol/responses.js";

const UNKNOWN = "No block with this node id among yours (another user's block is reported the same way).";

function blockJson(b: BlockRow): { date_created: number; last_active: number; short_name: string } {
  return { date_created: b.date_created, last_active: b.last_active, short_name: b.short_name };
}

export function blockRoutes(app: FastifyInstance, s: Services): void {
  const user = { auth: "user" as const };

  app.get(
    "/block",
    {
      config: user,
      schema: doc({
        tag: "Blocks",
        summary: "List your blocks",
        description: "Your claimed blocks, keyed by node id. A virtual block token registers the node ids it is used on here too.",
        ok: { 200: { description: "Your blocks.", data: BlockMap } },
      }),
    },
    async (request) => {
    const rows = await s.store.blocks.list(userOf(request).userId);
    const out: Record<string, ReturnType<typeof blockJson>> = {};
    for (const b of rows) out[b.node_id] = blockJson(b);
    return ok(out);
  });

  app.post(
    "/block",
    {
      config: user,
      schema: {
        ...doc({
          tag: "Blocks",
          summary: "Claim a block awaiting activation",
          description:
            "The second leg of two-legged activation: the block is awaiting activation while it holds a `GET " +
            "/block/:nodeId/activate` and for 60 s after its last one. Its waiting request (or its next one within 60 s) " +
            "receives the new token. A new token revokes the block's previous one.",
          ok: { 200: { description: "Claimed; the token goes to the waiting block." } },
          errors: {
            403: "The node id is an account's service node (`SVC` and a user id, home of its Webhooks, SMS, File Host and Email devices): it is no block. Or: signed in by the session cookie without the page's X-CSRF-Token header.",
            404: "No block with this node id is awaiting activation (none asked in the last 60 s).",
            409: "The block belongs to another user.",
          },
        }),
        body: ClaimBody,
      },
    },
    async (request) => {
    const { nodeid } = request.body as { nodeid: string };
    await s.activation.claim(nodeid, userOf(request).userId);
    return ok();
  });

  // An extension of the spec for the dashboard and the CLI: blocks awaiting activation that this
  // user may claim (Activation.awaitingFor). "awaiting" is no node id (those have 12+ characters).
  app.get(
    "/block/awaiting",
    {
      config: user,
      schema: doc({
        tag: "Blocks",
        summary: "Blocks awaiting activation that you may claim",
        description:
          "Not in the spec: for the dashboard and the command line. Blocks awaiting activation that you may claim, " +
          "newest first: your own blocks asking again, and unclaimed blocks asking from this request's own network " +
          "address (on a home network, the hub and the phone; from elsewhere, type the node id). Behind a proxy named by " +
          "`--trust-proxy`, the address is the one the proxy forwards; a request (or a block) through it that forwards none " +
          "has no known address and shares it with nobody.",
        ok: { 200: { description: "The waiting node ids and when each last asked.", data: AwaitingBlocks } },
      }),
    },
    async (request) => {
    const list = await s.activation.awaitingFor(userOf(request).userId, clientAddress(s, request));
    return ok(list.map((a) => ({ nodeid: a.nodeId, since: a.since })));
  });

  app.get(
    "/block/:nodeId",
    {
      config: user,
      schema: {
        ...doc({
          tag: "Blocks",
          summary: "Get one block",
          description: "When it was claimed, when it last used its token, and its name.",
          ok: { 200: { description: "The block.", data: Block } },
          errors: { 404: UNKNOWN },
        }),
        params: NodeIdParam,
      },
    },
    async (request) => {
    const { nodeId } = request.params as { nodeId: string };
    const b = await s.store.blocks.get(nodeId);
    if (!b || b.user_id !== userOf(request).userId) throw notFound(`unknown block ${nodeId}`);
    return ok(blockJson(b));
  });

  app.delete(
    "/block/:nodeId",
    {
      config: user,
      schema: {
        ...doc({
          tag: "Blocks",
          summary: "Unpair a block",
          description:
            "Removes the block, revokes its token, drops its queued commands and deletes its devices with their history, " +
            "so that the node can be claimed again, by anyone.",
          ok: { 200: { description: "Unpaired." } },
          errors: { 404: UNKNOWN },
        }),
        params: NodeIdParam,
      },
    },
    async (request) => {
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
  app.get(
    "/block/:nodeId/activate",
    {
      schema: {
        ...doc({
          tag: "Blocks",
          summary: "Activate a block (get its token)",
          description:
            "Two flows. **Two-legged** (no credential): the block waits here up to 30 s (`--poll-hold`); while it waits, " +
            "and for 60 s after, it is awaiting activation and a user can claim it with `POST /block`. The waiting " +
            "request then answers `{token}`; a wait that ends unclaimed answers 204 with no body, and the block asks " +
            "again. **Direct**: with a user credential in the query, the block is claimed for that user and the token " +
            "answered at once. Either way a new token revokes the block's previous one, and the answer is the bare " +
            "`{token}` object, not the envelope. Tokens are made when delivered and stored only as hashes. No HEAD.",
          ok: {
            200: { description: "The block token.", body: BlockToken, headers: { "cache-control": "no-store" } },
            204: { description: "Nobody claimed the block during the hold: ask again.", empty: true, headers: { "cache-control": "no-store" } },
          },
          errors: {
            401: "Direct flow: the credential in the query is unknown.",
            403: "The node id is an account's service node (`SVC` and a user id): no block is activated as one.",
            409: "The block belongs to another user.",
            429: "Too many waiting activations from one address (64) or in all (10,000): Retry-After is the hold's length (30 s by default). Or (direct flow) too many requests with the credential.",
          },
          security: [{}, { user_access_token: [] }, { access_token: [] }],
        }),
        params: NodeIdParam,
      },
      exposeHeadRoute: false,
    },
    async (request, reply) => {
    const { nodeId } = request.params as { nodeId: string };
    const q = request.query as Record<string, unknown>;
    // A credential in the body of a GET that needs none: no cache along the way may keep or replay it.
    void reply.header("cache-control", "no-store");
    if (q.user_access_token !== undefined || q.access_token !== undefined) {
      const principal = await s.auth.user(q);
      s.rateLimiter.take(principal.tokenHash);
      return reply.send({ token: await s.activation.direct(nodeId, principal.userId) });
    }
    const token = await s.activation.wait(nodeId, (cancel) => onClientGone(reply, cancel), request.ip, request.raw.socket, clientAddress(s, request));
    if (token === null) return reply.code(204).send();
    return reply.send({ token });
  });
}
