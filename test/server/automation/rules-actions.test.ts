import { readFile, readdir } from "node:fs/promises";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { SMTPServer } from "smtp-server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type TestServer, startTestServer } from "../../helpers/server.js";
import { waitFor } from "../../helpers/wait.js";
import { type Receiver, startReceiver } from "./helpers.js";

const NODE = "RULEACTIONS1";
const BUTTON = `${NODE}_0_0_5`;
const CAM = `${NODE}_0_0_1004`;
const JPEG = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.from("front door"), Buffer.from([0xff, 0xd9])]);

interface Env<T = unknown> {
  result: number;
  error: string | null;
  data: T;
}
interface Mail {
  to: string[];
  raw: string;
}

describe("rule actions: e-mail, snapshots and file hosts", () => {
  let t: TestServer;
  let bt: string;
  let smtp: SMTPServer;
  let receiver: Receiver;
  let fileHost: string;
  const mails: Mail[] = [];
  const q = (): string => `user_access_token=${t.token}`;
  const press = () =>
    t.api({ method: "POST", url: `/block/${NODE}/data`, headers: { "x-service-token": bt }, payload: { G: "0", V: 0, D: 5, DA: "1" } });
  const rule = async (actions: unknown[]): Promise<string> => {
    const res = await t.api({
      method: "POST",
      url: `/rule?${q()}`,
      payload: { shortName: "a", preconditions: [{ handler: "serviceChange", params: { guid: BUTTON, to: "1" } }], actions },
    });
    expect(res.statusCode).toBe(200);
    return (res.json() as Env<{ rid: string }>).data.rid;
  };
  const lastRun = (rid: string) =>
    waitFor("a rule run", async () => {
      const h = ((await t.api({ method: "GET", url: `/rule/${rid}?${q()}` })).json() as Env<{ history: { ok: boolean; error: string | null }[] }>).data.history;
      return h[0];
    }, 5000);
  /** Plays the camera's block: waits for the snapshot command and uploads a picture. */
  const cameraAnswers = async () => {
    await waitFor("the snapshot command", async () => {
      const rows = await t.server.services.store.commands.pending(NODE, Date.now());
      await t.server.services.store.commands.remove(rows.map((r) => r.id));
      return rows.some((r) => r.guid === CAM && r.da === "1");
    }, 3000);
    const up = await t.server.stream.inject({ method: "POST", url: `/rest/v0/camera/${CAM}/snapshot`, headers: { "x-service-token": bt, "content-type": "image/jpeg" }, payload: JPEG });
    expect(up.statusCode).toBe(200);
  };

  beforeAll(async () => {
    smtp = new SMTPServer({
      authOptional: true,
      disabledCommands: ["STARTTLS"],
      logger: false,
      onData(stream, session, callback) {
        const chunks: Buffer[] = [];
        stream.on("data", (c: Buffer) => chunks.push(c));
        stream.on("end", () => {
          mails.push({ to: session.envelope.rcptTo.map((r) => r.address), raw: Buffer.concat(chunks).toString() });
          callback();
        });
      },
    });
    await new Promise<void>((resolve) => smtp.listen(0, "127.0.0.1", resolve));
    const smtpPort = (smtp.server.address() as AddressInfo).port;
    receiver = await startReceiver();
    t = await startTestServer({ smtpUrl: `smtp://127.0.0.1:${smtpPort}` });
    bt = await t.activate(NODE);
    for (const D of [5, 1004]) {
      await t.api({ method: "POST", url: `/block/${NODE}/data`, headers: { "x-service-token": bt }, payload: { G: "0", V: 0, D, DA: "0" } });
    }
    fileHost = ((await t.server.api.inject({ method: "GET", url: `/auth/filehost?${q()}` })).json() as Env<{ guid: string }>).data.guid;
  });
  afterAll(async () => {
    await t.close();
    await receiver.close();
    await new Promise<void>((resolve) => smtp.close(() => resolve()));
  });

  it("serviceSendCommand to the Webhooks device calls the webhook actuator's url", async () => {
    const hooks = ((await t.server.api.inject({ method: "GET", url: `/auth/webhook?${q()}` })).json() as Env<{ guid: string }>).data.guid;
    const sub = await t.api({ method: "POST", url: `/device/${hooks}/subdevice?${q()}`, payload: { category: "webhook", type: "actuator", shortName: "Lamp", data: "lamp", url: `${receiver.url}/lamp` } });
    expect(sub.statusCode).toBe(200);
    const rid = await rule([{ handler: "serviceSendCommand", params: { guid: hooks, da: "lamp" } }]);
    await press();
    expect(await lastRun(rid)).toMatchObject({ ok: true });
    const got = await waitFor("the webhook call", () => receiver.received.find((r) => r.url === "/lamp"), 3000);
    expect(JSON.parse(got.body.toString())).toMatchObject({ data: "lamp", DA: "lamp", GUID: hooks });
    await t.api({ method: "DELETE", url: `/rule/${rid}?${q()}` });
  });

  it("sendEmail delivers the message with its subject and body to the SMTP server", async () => {
    const rid = await rule([{ handler: "sendEmail", params: { to: "owner@example.org", subject: "Door bell", body: "Someone pressed the bell.", guid: "N/A" } }]);
    await press();
    expect(await lastRun(rid)).toMatchObject({ ok: true });
    const mail = await waitFor("the e-mail", () => mails[0], 3000);
    expect(mail.to).toEqual(["owner@example.org"]);
    expect(mail.raw).toContain("Subject: Door bell");
    expect(mail.raw).toContain("Someone pressed the bell.");
    await t.api({ method: "DELETE", url: `/rule/${rid}?${q()}` });
  });

  it("getServiceSnapshot then sendToFileHost stores the picture in the File Host's directory", async () => {
    const refused = await t.api({ method: "PUT", url: `/device/${fileHost}/filehost?${q()}`, payload: { target: "../../etc" } });
    expect(refused.statusCode).toBe(400);
    const set = await t.api({ method: "PUT", url: `/device/${fileHost}/filehost?${q()}`, payload: { target: "snaps/front" } });
    expect(set.statusCode).toBe(200);
    const rid = await rule([
      { handler: "getNinjaSnapshot", params: { guid: CAM } },
      { handler: "sendToDropbox", params: { guid: fileHost } },
    ]);
    await press();
    await cameraAnswers();
    expect(await lastRun(rid)).toMatchObject({ ok: true });
    const dir = join(t.dir, "files", "1", "snaps", "front");
    const files = await readdir(dir);
    expect(files).toHaveLength(1);
    expect(files[0]).toMatch(new RegExp(`^${CAM}-.*\\.jpg$`));
    expect((await readFile(join(dir, files[0] as string))).equals(JPEG)).toBe(true);
    await t.api({ method: "DELETE", url: `/rule/${rid}?${q()}` });
  });

  it("sendToFileHost PUTs to an HTTP target, and fails clearly without a snapshot", async () => {
    await t.api({ method: "PUT", url: `/device/${fileHost}/filehost?${q()}`, payload: { target: `${receiver.url}/upload/` } });
    const rid = await rule([
      { handler: "getServiceSnapshot", params: { guid: CAM } },
      { handler: "sendToFileHost", params: { guid: fileHost } },
    ]);
    await press();
    await cameraAnswers();
    expect(await lastRun(rid)).toMatchObject({ ok: true });
    const got = await waitFor("the file host PUT", () => receiver.received.find((r) => r.method === "PUT"), 3000);
    expect(got.url).toMatch(/^\/upload\/.*\.jpg$/);
    expect(got.body.equals(JPEG)).toBe(true);
    await t.api({ method: "DELETE", url: `/rule/${rid}?${q()}` });

    const alone = await rule([{ handler: "sendToFileHost", params: { guid: fileHost } }]);
    await press();
    const run = await lastRun(alone);
    expect(run).toMatchObject({ ok: false });
    expect(run.error).toContain("put getServiceSnapshot before sendToFileHost");
    await t.api({ method: "DELETE", url: `/rule/${alone}?${q()}` });
  });
});
