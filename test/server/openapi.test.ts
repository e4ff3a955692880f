/**
 * The API reference: docs/openapi.json is what the routes generate (CI catches drift), every
 * operation is described with its answers, real answers match the documented schemas, and the
 * reference served at /docs uses nothing from another origin.
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { Ajv } from "ajv";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Static } from "@sinclair/typebox";
import Fastify from "fastify";
import type { BlockJson, CallbackJson, DataPoint, DeviceJson, HeartbeatRecord, RuleJson, UserJson } from "../../protocol/api-types.js";
import type { CallbackPayload } from "../../protocol/automation.js";
import type { CommandsResponse } from "../../protocol/payloads.js";
import type * as R from "../../protocol/responses.js";
import { DOCS_PREFIX, doc as routeDoc, docsPolicy, installDocs, openapiDocument } from "../../server/http/openapi/index.js";
import { REFERENCE_COMMAND, REFERENCE_PATH, referenceText } from "../../server/reference.js";
import { asBlock, asUser, freshNode } from "../helpers/core.js";
import { type TestServer, startTestServer } from "../helpers/server.js";

type Operation = {
  summary?: string;
  description?: string;
  tags?: string[];
  responses?: Record<string, { description?: string; content?: Record<string, { schema?: unknown }> }>;
  servers?: { url: string }[];
};
type Doc = { paths: Record<string, Record<string, Operation>>; components: { schemas: Record<string, unknown> } };

// The documented answers (protocol/responses.ts) and the types clients compile against (api-types.ts)
// describe the same shapes: `npm run check` fails when one changes without the other.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type Within<A, B> = [A] extends [B] ? true : false;
export const responsesMatchTypes: [
  Same<Static<typeof R.Device>, DeviceJson>,
  Same<Static<typeof R.Heartbeat>, HeartbeatRecord>,
  Same<Static<typeof R.DataPoints>, DataPoint[]>,
  Same<Static<typeof R.Block>, BlockJson>,
  Same<Static<typeof R.Rule>, RuleJson>,
  Same<Static<typeof R.User>, UserJson>,
  Same<Static<typeof R.CallbackDelivery>, CallbackPayload>,
  // This server always sends the secret; the client type allows a server that does not.
  Within<Static<typeof R.Callback>, CallbackJson>,
  // A constrained client (Ninja Arduino) gets commands without GUID; the others always with.
  Within<CommandsResponse, Static<typeof R.Commands>>,
] = [true, true, true, true, true, true, true, true, true];

const ROOT = join(import.meta.dirname, "../..");
const UI_STATIC = join(createRequire(import.meta.url).resolve("@fastify/swagger-ui/package.json"), "../static");

/** The first line where two texts differ, for a message that fits on a screen. */
function firstDifference(a: string, b: string): string | null {
  if (a === b) return null;
  const x = a.split("\n");
  const y = b.split("\n");
  for (let i = 0; i < Math.max(x.length, y.length); i++) {
    if (x[i] !== y[i]) return `line ${i + 1}: committed ${JSON.stringify(x[i] ?? "<end>")}, generated ${JSON.stringify(y[i] ?? "<end>")}`;
  }
  return "the texts differ";
}

describe("the API reference", () => {
  let t: TestServer;
  let doc: Doc;
  beforeAll(async () => {
    t = await startTestServer();
    doc = openapiDocument(t.server.api, t.server.stream) as unknown as Doc;
  });
  afterAll(async () => {
    await t?.close();
  });

  it(`${REFERENCE_PATH} is the generated one (else: run ${REFERENCE_COMMAND} and commit it)`, async () => {
    let committed = "";
    try {
      committed = readFileSync(join(ROOT, REFERENCE_PATH), "utf8");
    } catch {
      // A missing file is a difference like any other.
    }
    const diff = firstDifference(committed, await referenceText());
    expect(diff, `${REFERENCE_PATH} is not what the routes generate (${diff}): run \`${REFERENCE_COMMAND}\` and commit it`).toBeNull();
  });

  it("describes every operation in words, with a success answer and each refusal's status", () => {
    const ops = Object.entries(doc.paths).flatMap(([path, item]) => Object.entries(item).map(([method, op]) => ({ id: `${method.toUpperCase()} ${path}`, op })));
    expect(ops.length).toBeGreaterThanOrEqual(60);
    for (const { id, op } of ops) {
      expect(op.summary, id).toMatch(/\w/);
      expect((op.description ?? "").length, `${id}: a description`).toBeGreaterThan(10);
      expect(op.tags?.length, id).toBe(1);
      const statuses = Object.keys(op.responses ?? {});
      expect(statuses.some((s) => /^[123]/.test(s)), `${id}: a success answer`).toBe(true);
      for (const [status, r] of Object.entries(op.responses ?? {})) expect(r.description, `${id} ${status}`).not.toBe("Default Response");
    }
    // The fast lane's routes (answered before fastify) and the WebSocket are documented too.
    for (const kind of ["data", "heartbeat", "config"]) {
      expect(doc.paths[`/rest/v0/block/{nodeId}/${kind}`]?.post?.description).toContain("Fast lane");
    }
    expect(doc.paths["/rest/v0/stream"]?.get?.summary).toContain("WebSocket");
    // Camera snapshots are on the stream listener.
    expect(doc.paths["/rest/v0/camera/{guid}/snapshot"]?.get?.servers?.[0]?.url).toBe("{stream_url}");
    // Every refusal of the REST API is the envelope.
    const refusal = doc.paths["/rest/v0/device/{guid}"]?.get?.responses?.["404"];
    expect(refusal?.content?.["application/json"]?.schema).toEqual({ $ref: "#/components/schemas/ErrorEnvelope" });
  });

  it("declares Retry-After on every 429, as the server sends it (whole seconds)", async () => {
    type Header = { schema?: { type?: string; minimum?: number }; description?: string };
    const throttled = Object.entries(doc.paths).flatMap(([path, item]) =>
      Object.entries(item).flatMap(([method, op]) => {
        const r = op.responses?.["429"] as { description?: string; headers?: Record<string, Header> } | undefined;
        return r ? [{ id: `${method.toUpperCase()} ${path}`, r }] : [];
      }),
    );
    // The credential's limit on every user and block route, and the routes' own (activation holds, stream caps, login, camera, tickle).
    expect(throttled.length).toBeGreaterThanOrEqual(40);
    for (const { id, r } of throttled) {
      const header = r.headers?.["Retry-After"];
      expect(header?.schema, `${id} 429: Retry-After declared`).toEqual({ type: "integer", minimum: 1 });
      expect(header?.description ?? "", `${id} 429: Retry-After described`).toMatch(/whole seconds/i);
      expect(r.description ?? "", `${id} 429: its description names Retry-After`).toMatch(/Retry-After/);
    }
    // A real 429 carries the header the reference declares.
    const limited = await startTestServer({ rateLimitPerSecond: 1 }, { listen: true });
    try {
      const get = () => fetch(`${limited.baseUrl}/user?user_access_token=${limited.token}`);
      let answer = await get();
      for (let i = 0; i < 10 && answer.status !== 429; i++) answer = await get();
      expect(answer.status).toBe(429);
      expect(answer.headers.get("retry-after")).toMatch(/^[1-9][0-9]*$/);
    } finally {
      await limited.close();
    }
  });

  it("documents answers that real ones match", async () => {
    const ajv = new Ajv({ strict: false, validateFormats: false, allErrors: true });
    ajv.addSchema({ ...doc, $id: "openapi" } as object);
    const check = (method: string, path: string, status: number, body: unknown): void => {
      const pointer = `/paths/${path.replaceAll("~", "~0").replaceAll("/", "~1")}/${method}/responses/${status}/content/application~1json/schema`;
      const validate = ajv.compile({ $ref: `openapi#${pointer}` });
      expect(validate(body), `${method.toUpperCase()} ${path} ${status}: ${ajv.errorsText(validate.errors)}\n${JSON.stringify(body)}`).toBe(true);
    };
    const node = freshNode("OPENAPI");
    const bt = await t.activate(node);
    const temp = `${node}_0_0_9`;
    const rf = `${node}_0_0_11`;
    await asBlock(t, node, bt, "data", { G: "0", V: 0, D: 9, DA: "21.5" });
    check("post", "/rest/v0/block/{nodeId}/data", 200, (await asBlock(t, node, bt, "data", { G: "0", V: 0, D: 11, DA: "0101" })).body);
    check("post", "/rest/v0/block/{nodeId}/config", 200, (await asBlock(t, node, bt, "config", { G: "0", V: 0, D: 9, type: "PLUGIN" })).body);
    check("get", "/rest/v0/devices", 200, (await asUser(t, "GET", "/devices")).body);
    check("get", "/rest/v0/device/{guid}", 200, (await asUser(t, "GET", `/device/${temp}`)).body);
    check("get", "/rest/v0/device/{guid}/heartbeat", 200, (await asUser(t, "GET", `/device/${temp}/heartbeat`)).body);
    check("get", "/rest/v0/device/{guid}/data", 200, (await asUser(t, "GET", `/device/${temp}/data`)).body);
    check("get", "/rest/v0/device/{guid}/data", 200, (await asUser(t, "GET", `/device/${temp}/data?interval=1hour&fn=max`)).body);
    check("get", "/rest/v0/device/{guid}", 404, (await asUser(t, "GET", `/device/${node}_0_0_404`)).body);
    check("post", "/rest/v0/device/{guid}/subdevice", 200, (await asUser(t, "POST", `/device/${rf}/subdevice`, { category: "rf", type: "sensor", shortName: "door", data: "0101" })).body);
    check("get", "/rest/v0/device/{guid}", 200, (await asUser(t, "GET", `/device/${rf}`)).body);
    check("post", "/rest/v0/device/{guid}/callback", 200, (await asUser(t, "POST", `/device/${temp}/callback`, { url: "http://127.0.0.1:9/cb" })).body);
    check("get", "/rest/v0/device/{guid}/callback", 200, (await asUser(t, "GET", `/device/${temp}/callback`)).body);
    check("get", "/rest/v0/block", 200, (await asUser(t, "GET", "/block")).body);
    check("get", "/rest/v0/block/{nodeId}", 200, (await asUser(t, "GET", `/block/${node}`)).body);
    check("get", "/rest/v0/user", 200, (await asUser(t, "GET", "/user")).body);
    const rule = { shortName: "hot", preconditions: [{ handler: "serviceChange", params: { guid: temp, to: "30" } }], actions: [{ handler: "sleep", params: { guid: "N/A", sleepLength: 1 } }] };
    const created = await asUser<{ data: { rid: string } }>(t, "POST", "/rule", rule);
    check("post", "/rest/v0/rule", 200, created.body);
    check("get", "/rest/v0/rule", 200, (await asUser(t, "GET", "/rule")).body);
    check("get", "/rest/v0/rule/{rid}", 200, (await asUser(t, "GET", `/rule/${created.body.data.rid}`)).body);
    await asBlock(t, node, bt, "data", { G: "1", V: 0, D: 1002, DA: "0" });
    check("put", "/rest/v0/device/{guid}", 200, (await asUser(t, "PUT", `/device/${node}_1_0_1002`, { shortName: "lamp", DA: "1" })).body);
    check("get", "/rest/v0/block/{nodeId}/commands", 200, (await asBlock(t, node, bt, "commands")).body);
    check("get", "/rest/v0/block/{nodeId}/activate", 200, JSON.parse((await t.api({ method: "GET", url: `/block/${freshNode("OPENAPI")}/activate?user_access_token=${t.token}` })).body));
    check("get", "/rest/v0/block/{nodeId}/activate", 401, JSON.parse((await t.api({ method: "GET", url: `/block/${node}/activate?user_access_token=nope` })).body));
    const webhooks = JSON.parse((await t.server.api.inject({ method: "GET", url: `/auth/webhook?user_access_token=${t.token}` })).body) as { data: { guid: string } };
    check("get", "/auth/webhook", 200, webhooks);
    const hooks = webhooks.data.guid;
    const sensor = await asUser<{ data: { id: string; token: string } }>(t, "POST", `/device/${hooks}/subdevice`, { category: "webhook", type: "sensor", shortName: "door bell" });
    check("post", "/rest/v0/device/{guid}/subdevice", 200, sensor.body);
    const tickle = await t.api({ method: "POST", url: `/device/${hooks}/subdevice/${sensor.body.data.id}/tickle/${sensor.body.data.token}` });
    check("post", "/rest/v0/device/{deviceGuid}/subdevice/{subDeviceId}/tickle/{token}", 200, JSON.parse(tickle.body));
    check("get", "/rest/v0/device/{guid}/subdevice/{subdeviceId}/data", 200, (await asUser(t, "GET", `/device/${hooks}/subdevice/${sensor.body.data.id}/data?interval=1day`)).body);
    const tickled = await t.api({ method: "POST", url: `/device/${hooks}/subdevice/${sensor.body.data.id}/tickle/wrong` });
    check("post", "/rest/v0/device/{deviceGuid}/subdevice/{subDeviceId}/tickle/{token}", 401, JSON.parse(tickled.body));
    check("put", "/rest/v0/device/{guid}/subdevice/{subdeviceId}", 200, (await asUser(t, "PUT", `/device/${hooks}/subdevice/${sensor.body.data.id}`, { shortName: "front door" })).body);
    check("post", "/rest/v0/device/{guid}/callback", 409, (await asUser(t, "POST", `/device/${temp}/callback`, { url: "http://127.0.0.1:9/cb" })).body);
    check("get", "/rest/v0/rule/{rid}", 404, (await asUser(t, "GET", "/rule/999999")).body);
    check("get", "/rest/v0/devices", 401, (await asUser(t, "GET", "/devices", undefined, "not-a-token")).body);
    check("get", "/healthz", 200, JSON.parse((await t.server.api.inject({ method: "GET", url: "/healthz" })).body));
  });

  it("refuses a route that would serialise with a response schema (it would change what the route sends)", async () => {
    const app = Fastify();
    await installDocs(app);
    app.get("/x", { schema: { ...routeDoc({ tag: "Operations", summary: "x", description: "an example route", ok: { 200: { description: "ok" } } }) } }, () => ({ a: 1 }));
    app.get("/y", { schema: { response: { 200: { type: "object", properties: {} } } } }, () => ({ a: 1 }));
    await app.ready();
    expect(() => app.swagger()).toThrow(/GET \/y: a fastify response schema changes what the route sends/);
    await app.close();
  });

  it("serves the reference at /docs from the package's assets, with nothing from another origin", async () => {
    const get = (url: string) => t.server.api.inject({ method: "GET", url });
    const page = await get(DOCS_PREFIX);
    expect(page.statusCode).toBe(200);
    expect(page.headers["content-type"]).toMatch(/^text\/html/);
    expect(page.headers["content-security-policy"]).toBe(docsPolicy());
    expect(page.headers["x-content-type-options"]).toBe("nosniff");
    expect(page.headers["x-frame-options"]).toBe("DENY");
    // The policy names no other origin: whatever the UI's script holds, a browser fetches nothing elsewhere.
    expect(docsPolicy()).not.toMatch(/https?:|\*|\/\//);
    const refs = [...page.body.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1] as string);
    expect(refs.length).toBeGreaterThanOrEqual(5);
    for (const ref of refs) {
      expect(ref, "a reference relative to this server").not.toMatch(/^(https?:)?\/\//);
      const asset = await get(new URL(ref, `http://x${DOCS_PREFIX}`).pathname);
      expect(asset.statusCode, ref).toBe(200);
      expect(asset.headers["content-security-policy"], ref).toBe(docsPolicy());
      const name = ref.split("/").pop() as string;
      if (name !== "swagger-initializer.js") expect(asset.rawPayload.equals(readFileSync(join(UI_STATIC, name))), `${name} is the package's file`).toBe(true);
      else {
        // Its code names no address elsewhere (a comment may cite a web page).
        expect(asset.body.replace(/^\s*\/\/.*$/gm, "")).not.toMatch(/https?:\/\//);
        expect(asset.body).toMatch(/validatorUrl: null/);
      }
    }
    // The document served names this server relatively, and the stream listener by its address.
    const spec = JSON.parse((await get(`${DOCS_PREFIX}/json`)).body) as Doc & { servers: { url: string }[] };
    expect(spec.servers).toEqual([{ url: "/", description: "This server (auth_url)." }]);
    expect(Object.keys(spec.paths).sort()).toEqual(Object.keys(doc.paths).sort());
  });
});
