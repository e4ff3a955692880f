/**
 * The camera on the stream listener ({stream_url}): a user's GET waits for the block's upload and
 * answers the image (not an envelope, caching disabled); the block's POST (X-Service-Token, body
 * the image, Content-Type image/jpeg, up to 10 MiB) is checked before its body is read.
 */
import { Type } from "@sinclair/typebox";
import type { FastifyInstance } from "fastify";
import { ok } from "../../protocol/envelope.js";
import { GuidParam } from "../../protocol/payloads.js";
import type { Services } from "../services/index.js";
import type { DeviceRow } from "../store/types.js";
import { blockToken, userOf } from "./auth.js";
import { SNAPSHOT_BODY_LIMIT } from "./constants.js";
import { doc } from "./openapi/route-doc.js";

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

  const get = doc({
    tag: "Camera",
    summary: "Take a snapshot",
    description:
      "On the stream listener. Sends DA `\"1\"` to the camera device (D 1004; one command per burst of requests) and " +
      "waits for its block's upload, which is then answered to every waiting user: the image bytes (not the envelope), " +
      "caching disabled. No upload within 10 s: 504. No HEAD: it would send the camera its command.",
    ok: { 200: { description: "The image.", type: "image/jpeg", headers: { "cache-control": "no-store, no-cache, must-revalidate, max-age=0" } } },
    errors: {
      400: "The device is not a camera.",
      404: "No device with this GUID among yours.",
      503: "The server is shutting down, or its store cannot write.",
      504: "The camera's block did not upload a snapshot within 10 s.",
    },
    streamListener: true,
  });
  // No HEAD twin: a HEAD would send the camera a snapshot command (an actuation) for an answer without the image.
  app.get("/rest/v0/camera/:guid/snapshot", { config: { auth: "user" }, schema: { ...get, params: GuidParam }, exposeHeadRoute: false }, async (request, reply) => {
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
      schema: {
        ...doc({
          tag: "Camera",
          summary: "Upload a snapshot (block)",
          description:
            "On the stream listener, with the block token of the camera's block (or the virtual block token of its " +
            "owner). The body is the image, `Content-Type: image/jpeg`, up to 10 MiB; the token and the size are checked " +
            "before the body is read. The image goes to every user waiting on the camera.",
          ok: { 200: { description: "Stored and handed to the waiting users." } },
          errors: {
            400: "The GUID is not a device GUID, the device is not a camera, or the body is empty.",
            401: "No block token, or one the server does not know.",
            403: "The camera does not belong to this block.",
            413: "The image is larger than 10 MiB.",
            415: "The Content-Type is not image/jpeg.",
            429: "Too many uploads for this camera (the credentials' rate limit, per camera): retry after Retry-After.",
          },
          body: { schema: Type.String({ format: "binary" }), types: ["image/jpeg"] },
          security: [{ block_token: [] }, { ninja_token: [] }],
          streamListener: true,
        }),
        params: GuidParam,
      },
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
