/**
 * Callback URLs, webhook actuator URLs and File Host targets are checked against the outbound
 * policy when they are registered, as far as no DNS is needed: a literal address the policy
 * refuses, or `localhost`, is a 400 naming the URL and the rule, and nothing is stored. Host names
 * are accepted (they are checked at each connect: outbound.test.ts).
 */
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { type TestServer, startTestServer } from "../../helpers/server.js";

interface Env<T = unknown> {
  result: number;
  error: string | null;
  data: T;
}

const NODE = "OUTBOUNDREG001";
const GUID = `${NODE}_0_0_9`;

describe("outbound policy at registration", () => {
  let t: TestServer;
  afterEach(async () => {
    await t.close();
  });

  async function setUp(outbound: { allow?: string[]; deny?: string[] }) {
    t = await startTestServer({ outbound }, { listen: true });
    const q = `user_access_token=${t.token}`;
    const bt = await t.activate(NODE);
    await t.api({ method: "POST", url: `/block/${NODE}/data`, headers: { "x-service-token": bt }, payload: { G: "0", V: 0, D: 9, DA: "1" } });
    const hooks = ((await t.server.api.inject({ method: "GET", url: `/auth/webhook?${q}` })).json() as Env<{ guid: string }>).data.guid;
    const host = ((await t.server.api.inject({ method: "GET", url: `/auth/filehost?${q}` })).json() as Env<{ guid: string }>).data.guid;
    let lastId = "";
    const answer = async (method: string, url: string, payload: object) => {
      const res = await t.api({ method: method as "POST", url: `${url}?${q}`, payload });
      const body = res.json() as Env<{ id?: string } | undefined>;
      if (body.data?.id) lastId = body.data.id;
      return { status: res.statusCode, error: body.error };
    };
    return {
      callback: (url: string, method = "POST") => answer(method, `/device/${GUID}/callback`, { url }),
      webhook: (url: string) => answer("POST", `/device/${hooks}/subdevice`, { category: "webhook", type: "actuator", shortName: "W", data: "w", url }),
      changeWebhook: async (url: string) => {
        const made = await answer("POST", `/device/${hooks}/subdevice`, { category: "webhook", type: "actuator", shortName: "W", data: "w", url: "http://lamp.example/on" });
        expect(made.status).toBe(200);
        return answer("PUT", `/device/${hooks}/subdevice/${lastId}`, { url });
      },
      fileHost: (target: string) => answer("PUT", `/device/${host}/filehost`, { target }),
      stored: async () => (await t.api({ method: "GET", url: `/device/${GUID}/callback?${q}` })).statusCode,
    };
  }

  it("refuses denied literal addresses and localhost at once, naming the URL and the rule; accepts host names", async () => {
    const r = await setUp({ deny: ["10.9.0.0/16"] });
    const apiPort = (t.server.api.server.address() as AddressInfo).port;
    const rule = "(the server's outbound policy: --outbound-allow, --outbound-deny)";
    expect(await r.callback("http://169.254.169.254/latest/meta-data")).toEqual({
      status: 400,
      error: `callback URL "http://169.254.169.254/latest/meta-data" is refused: 169.254.169.254:80 is in a denied network (169.254.0.0/16) ${rule}`,
    });
    // Other spellings of the same addresses (the URL parser's normal forms are what connect uses).
    expect((await r.callback("http://[::ffff:169.254.169.254]/", "PUT")).error).toContain("is in a denied network (169.254.0.0/16)");
    expect((await r.callback(`http://2130706433:${apiPort}/x`)).error).toContain(`127.0.0.1:${apiPort} is in a denied network (the server's own listener)`);
    expect((await r.callback(`http://localhost:${apiPort}/x`)).error).toBe(
      `callback URL "http://localhost:${apiPort}/x" is refused: localhost is a loopback name: 127.0.0.1:${apiPort} is in a denied network (the server's own listener); ::1:${apiPort} is in a denied network (the server's own listener) ${rule}`,
    );
    expect((await r.callback("https://10.9.3.4/cb")).error).toContain('"https://10.9.3.4/cb" is refused: 10.9.3.4:443 is in a denied network (10.9.0.0/16)');
    expect((await r.callback("http://exa mple/")).error).toBe('callback URL "http://exa mple/" is refused: it is not a valid URL');
    expect(await r.stored()).toBe(404);
    // The same rule on webhook actuators (created or changed) and File Host targets.
    expect(await r.webhook("http://169.254.169.254/")).toEqual({
      status: 400,
      error: `webhook url "http://169.254.169.254/" is refused: 169.254.169.254:80 is in a denied network (169.254.0.0/16) ${rule}`,
    });
    expect((await r.changeWebhook("http://[fe80::1]:8080/")).error).toBe(
      `webhook url "http://[fe80::1]:8080/" is refused: fe80::1:8080 is in a denied network (fe80::/10) ${rule}`,
    );
    expect((await r.fileHost("http://10.9.0.1/files")).error).toContain('File Host target "http://10.9.0.1/files" is refused: 10.9.0.1:80 is in a denied network (10.9.0.0/16)');
    // Allowed: a LAN address, a loopback port that is not the server's, a host name (checked at connect).
    expect(await r.callback("http://192.168.1.20:8080/cb")).toEqual({ status: 200, error: null });
    expect(await r.callback("http://localhost:1/cb", "PUT")).toEqual({ status: 200, error: null });
    expect(await r.callback("http://receiver.example/cb", "PUT")).toEqual({ status: 200, error: null });
    expect((await r.webhook("http://lamp.example/on")).status).toBe(200);
    expect((await r.fileHost("http://10.8.0.1/files")).status).toBe(200);
  });

  it("with --outbound-allow, refuses a literal address outside it", async () => {
    const r = await setUp({ allow: ["192.168.1.0/24"] });
    expect(await r.callback("http://192.168.2.1/cb")).toEqual({
      status: 400,
      error: `callback URL "http://192.168.2.1/cb" is refused: 192.168.2.1 is outside every --outbound-allow network (the server's outbound policy: --outbound-allow, --outbound-deny)`,
    });
    expect((await r.callback("http://192.168.1.9/cb")).status).toBe(200);
  });
});
