/**
 * The camera on the stream listener ({stream_url}): a user's GET waits for the block's upload and
 * answers the image (not an envelope, caching disabled); the block's POST (X-Service-Token, body
 * the image, Content-Type image/jpeg, up to 10 MiB) is checked before its body is read.
 */
import type { FastifyInstance } from "fastify";
import { ok } from "../../protocol/envelope.js";
import { GuidParam } from "../../protocol/payloads.js";
import type { Services } from "../services/index.js";
import type { DeviceRow } from "../store/types.js";
import { blockToken, userOf } from "./auth.js";

/** Largest upload (DESIGN.md "Limits"), the stream listener's body limit too. */
const SNAPSHOT_BODY_LIMIT = 10 * 1024 * 1024;

declare module "fastify" {
  interface FastifyRequest {
    camera: DeviceRow | null;
  }
}

export function cameraRoutes(app: FastifyInstance, s: Services): void {
  const camera = s.automation.camera;
  app.decorateRequest("camera", null);
  app.addContentTypeParser("image/jpeg", { parseAs: "buffer", bodyLimit: SNAPSHOT_BODY_LIMIT }, (_request, body, done) => {
    done(null, body);
  });

  app.get("/rest/v0/camera/:guid/snapshot", { config: { auth: "user" }, schema: { params: GuidParam } }, async (request, reply) => {
    const { guid } = request.params as { guid: string };
    const abort = new AbortController();
    reply.raw.once("close", () => {
      if (!reply.raw.writableFinished) abort.abort();
    });
    const snap = await camera.snapshot(userOf(request).userId, guid, abort.signal);
    return reply
      .type(snap.contentType)
      .header("cache-control", "no-store, no-cache, must-revalidate, max-age=0")
      .header("pragma", "no-cache")
      .header("expires", "0")
      .send(snap.body);
  });

  app.post(
    "/rest/v0/camera/:guid/snapshot",
    {
      schema: { params: GuidParam },
      // Before the body is read: a block that does not own the camera never uploads 10 MiB.
      onRequest: async (request) => {
        const { guid } = request.params as { guid: string };
        request.camera = await camera.authorizeUpload(guid, blockToken(request.headers));
        s.rateLimiter.take(`camera:${request.camera.id}`);
        if (Number(request.headers["content-length"] ?? 0) > SNAPSHOT_BODY_LIMIT) {
          throw Object.assign(new Error("the snapshot is larger than 10 MiB"), { statusCode: 413 });
        }
        const type = (request.headers["content-type"] ?? "").split(";")[0]?.trim().toLowerCase();
        if (type !== "image/jpeg") {
          // The error handler keeps a 4xx status of errors outside the catalogue.
          throw Object.assign(new Error(`a snapshot upload must have Content-Type image/jpeg, not "${type ?? ""}"`), { statusCode: 415 });
        }
      },
    },
    async (request) => {
      const body = request.body;
      const cam = request.camera as DeviceRow;
      await camera.upload(cam, "image/jpeg", Buffer.isBuffer(body) ? body : Buffer.alloc(0));
      return ok();
    },
  );
}
