/**
 * The original Arduino Ethernet block library (a raw-socket fake sending its measured bytes)
 * against a real server on loopback: X-Ninja-Token is a block token header, its half-closed POST
 * keeps the reading, and its polls get one command each, small enough for its 128-byte read.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FastIngest } from "../../server/http/fast-ingest.js";
import { OK, asUser, expectRefused, freshNode } from "../helpers/core.js";
import { waitFor } from "../helpers/wait.js";
import { ARDUINO_BODY_BYTES, NinjaArduinoClient, parseLikeTheLibrary } from "../helpers/ninja-arduino.js";
import { type TestServer, startTestServer } from "../helpers/server.js";

let t: TestServer;
let port: number;

beforeAll(async () => {
  t = await startTestServer({ host: "127.0.0.1", port: 0, streamPort: 0, pollHoldSeconds: 5 }, { listen: true });
  port = Number(new URL(t.baseUrl as string).port);
});
afterAll(async () => {
  await t?.close();
});

async function arduino(prefix: string): Promise<NinjaArduinoClient> {
  const node = freshNode(prefix);
  return new NinjaArduinoClient("127.0.0.1", port, node, await t.activate(node));
}

async function readings(guid: string): Promise<unknown[]> {
  const r = await asUser<{ data: { v: unknown }[] }>(t, "GET", `/device/${guid}/data?from=0`);
  return r.status === 200 ? r.body.data.map((p) => p.v) : [];
}

describe("the Arduino Ethernet block library", () => {
  it("posts readings with X-Ninja-Token and a stray CRLF, half-closing at once, and none is lost", async () => {
    const a = await arduino("ARDUINOPOST");
    const lane = t.server.api.fastIngest as FastIngest;
    const taken = lane.stats.taken;
    const answers: string[] = [];
    for (const DA of ["000000", "FF0000", "00FF00"]) answers.push(await a.post({ G: "0", V: 0, D: 1000, DA }));
    await a.post({ G: "0", V: 0, D: 9, DA: 21 }); // send(int): DA bare
    for (const raw of answers) expect(raw).toMatch(/^HTTP\/1\.1 200 /);
    const guid = `${a.nodeId}_0_0_1000`;
    expect(await readings(guid)).toEqual(["000000", "FF0000", "00FF00"]);
    expect(await readings(`${a.nodeId}_0_0_9`)).toEqual([21]);
    // The fast lane reads the same header: once the token is cached, it takes these posts.
    expect(lane.stats.taken - taken).toBeGreaterThanOrEqual(2);
  });

  it("is refused with 401 for an unknown X-Ninja-Token, on every block route", async () => {
    const node = freshNode("ARDUINOBAD");
    const bad = new NinjaArduinoClient("127.0.0.1", port, node, "not-a-token");
    expect(await bad.post({ G: "0", V: 0, D: 1000, DA: "000000" })).toMatch(/^HTTP\/1\.1 401 /);
    const token = await t.activate(node);
    for (const kind of ["heartbeat", "config", "data"] as const) {
      const body = kind === "heartbeat" ? [{ G: "0", V: 0, D: 9, DA: "1" }] : { G: "0", V: 0, D: 9, DA: "1", type: "PLUGIN" };
      const good = await t.api({ method: "POST", url: `/block/${node}/${kind}`, headers: { "x-ninja-token": token }, payload: body });
      expect(good.json(), kind).toEqual(OK);
      const wrong = await t.api({ method: "POST", url: `/block/${node}/${kind}`, headers: { "x-ninja-token": "nope" }, payload: body });
      expectRefused({ status: wrong.statusCode, body: wrong.json(), text: wrong.body }, 401, /block token/);
    }
    // The camera upload (on the stream port) reads the same header: a known token gets past 401.
    const upload = (headers: Record<string, string>) =>
      t.server.stream.inject({
        method: "POST",
        url: `/rest/v0/camera/${node}_0_0_1004/snapshot`,
        headers: { "content-type": "image/jpeg", ...headers },
        payload: Buffer.from([0xff, 0xd8, 0xff, 0xd9]),
      });
    expect((await upload({ "x-ninja-token": "nope" })).statusCode).toBe(401);
    expect((await upload({ "x-ninja-token": token })).statusCode).toBe(403);
  });

  it("gets a burst of three commands over three polls, one each, in order, within its 128-byte read", async () => {
    const a = await arduino("ARDUINOCMD");
    await a.post({ G: "0", V: 0, D: 1000, DA: "000000" });
    await a.post({ G: "1", V: 0, D: 1002, DA: "0" });
    const led = `${a.nodeId}_0_0_1000`;
    const relay = `${a.nodeId}_1_0_1002`;
    expect((await asUser(t, "PUT", `/device/${led}`, { DA: "FF0000" })).status).toBe(200);
    expect((await asUser(t, "PUT", `/device/${relay}`, { DA: "1" })).status).toBe(200);
    expect((await asUser(t, "PUT", `/device/${led}`, { DA: "0000FF" })).status).toBe(200);
    const got = [];
    for (let i = 0; i < 3; i++) {
      const r = await a.poll();
      const body = r.raw.slice(r.raw.indexOf("\r\n\r\n") + 4);
      expect(Buffer.byteLength(body)).toBeLessThanOrEqual(ARDUINO_BODY_BYTES);
      expect(body).toMatch(/^\{"DEVICE":\[\{"G":"[^"]+","V":\d+,"D":\d+,"DA":"[^"]*"\}\]\}$/);
      expect(r.raw).toMatch(/\r\nconnection: close\r\n/i);
      expect(r.hung).toBe(false);
      got.push(r.command);
    }
    expect(got).toEqual([
      { G: "0", V: 0, D: 1000, DA: "FF0000" },
      { G: "1", V: 0, D: 1002, DA: "1" },
      { G: "0", V: 0, D: 1000, DA: "0000FF" },
    ]);
  });

  it("gets a command put while its poll is held, and the next ones on its next polls", async () => {
    const a = await arduino("ARDUINOHOLD");
    await a.post({ G: "0", V: 0, D: 1000, DA: "000000" });
    const led = `${a.nodeId}_0_0_1000`;
    const held = a.poll();
    await waitFor("the poll held", () => t.server.services.commands.heldPolls > 0, 5000);
    const puts = Promise.all(["110000", "220000", "330000"].map((DA) => asUser(t, "PUT", `/device/${led}`, { DA })));
    const first = await held;
    await puts;
    const second = await a.poll();
    const third = await a.poll();
    expect([first, second, third].map((r) => r.command?.DA)).toEqual(["110000", "220000", "330000"]);
  });

  it("gets the command behind a dropped one on its next poll at once, also when removing the dropped one failed", async () => {
    const a = await arduino("ARDUINODROP");
    await a.post({ G: "0", V: 0, D: 1000, DA: "000000" });
    const led = `${a.nodeId}_0_0_1000`;
    // Too long for its 128-byte read (dropped), then one that fits.
    expect((await asUser(t, "PUT", `/device/${led}`, { DA: "F".repeat(200) })).status).toBe(200);
    expect((await asUser(t, "PUT", `/device/${led}`, { DA: "00FF00" })).status).toBe(200);
    const commands = t.server.services.store.commands;
    const remove = commands.remove.bind(commands);
    commands.remove = () => {
      commands.remove = remove;
      // The store could not take its write lock in time: a 503 to retry, the store sound.
      return Promise.reject(Object.assign(new Error("database is locked"), { code: "SQLITE_BUSY" }));
    };
    const failed = await a.poll();
    expect(failed.raw).toMatch(/^HTTP\/1\.1 503 /);
    // The poll holds 5 s here: an answer well within it is the command, not the end of the hold.
    const started = performance.now();
    const next = await a.poll();
    expect(next.command?.DA).toBe("00FF00");
    expect(performance.now() - started).toBeLessThan(2_500);
  });

  it("still gets whole batches when it is not the constrained client", async () => {
    const node = freshNode("NINJANODE");
    const token = await t.activate(node);
    const poll = () =>
      t.api({ method: "GET", url: `/block/${node}/commands`, headers: { "x-ninja-token": token, "user-agent": "ninja-client/0.1" } });
    await t.api({ method: "POST", url: `/block/${node}/data`, headers: { "x-ninja-token": token }, payload: { G: "0", V: 0, D: 1000, DA: "000000" } });
    for (const DA of ["FF0000", "00FF00"]) await asUser(t, "PUT", `/device/${node}_0_0_1000`, { DA });
    expect((await poll()).json()).toMatchObject({ DEVICE: [{ DA: "FF0000", GUID: `${node}_0_0_1000` }, { DA: "00FF00" }] });
  });

  it("parses like the library: a later command in the same 128 bytes overwrites the first; V and D need a comma after them", () => {
    const head = "HTTP/1.1 401 Unauthorized\r\ncontent-type: application/json\r\n\r\n";
    const two = `${head}{"DEVICE":[{"G":"0","V":0,"D":1000,"DA":"FF0000"},{"G":"1","V":0,"D":1002,"DA":"1"}]}`;
    expect(parseLikeTheLibrary(two).command).toEqual({ G: "1", V: 0, D: 1002, DA: "1" });
    expect(parseLikeTheLibrary(`${head}{"DEVICE":[{"G":"0","V":0,"D":1000,"DA":"FF0000"}]}`).command).toEqual({ G: "0", V: 0, D: 1000, DA: "FF0000" });
    expect(parseLikeTheLibrary(`${head}{"DEVICE":[{"G":"0","V":0,"DA":"1","D":1002}]}`).hung).toBe(true);
    expect(parseLikeTheLibrary(`${head}{"DEVICE":[{"G":"0","V":0,"D":1002,"DA":1}]}`).command).toBeNull();
  });
});

describe("config events", () => {
  it("an UNPLUG for a device never seen creates nothing; for a known one it marks it unplugged", async () => {
    const node = freshNode("UNPLUGNODE");
    const token = await t.activate(node);
    const config = (G: string, type: string) =>
      t.api({ method: "POST", url: `/block/${node}/config`, headers: { "x-service-token": token }, payload: { G, V: 0, D: 0, DA: 0, type } });
    for (const G of ["1", "2", "3"]) expect((await config(G, "UNPLUG")).json()).toEqual(OK);
    const devices = async () => ((await asUser<{ data: Record<string, unknown> }>(t, "GET", "/devices")).body.data ?? {});
    expect(Object.keys(await devices()).filter((g) => g.startsWith(node))).toEqual([]);
    expect((await config("2", "PLUGIN")).json()).toEqual(OK);
    expect((await config("2", "UNPLUG")).json()).toEqual(OK);
    const all = await devices();
    expect(Object.keys(all).filter((g) => g.startsWith(node))).toEqual([`${node}_2_0_0`]);
    expect(JSON.stringify(all[`${node}_2_0_0`])).toContain('"plugged":false');
  });
});
