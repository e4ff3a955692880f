/**
 * BlockClient's mapping of its transports' outcomes (an answer, a refused connection, a timeout,
 * an abort) to BlockClientError, over each transport it can be given: node:http by default, undici
 * with a dispatcher, the lean HTTP/1.1 one. Apart from transport.test.ts because it tests the
 * client, not the transports; both send to the same loopback server (test/helpers/transport-server.ts).
 */
import { Agent } from "undici";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { BlockClient, BlockClientError } from "../../protocol/block-client.js";
import { Http1Transport } from "../../simulator/transport/http1-transport.js";
import { refusingAddress } from "../helpers/process.js";
import { base, serveTransportRoutes } from "../helpers/transport-server.js";

const NODE = "TRANSPORT00001";

serveTransportRoutes();

describe.each([
  ["default (node:http)", (): BlockClient => new BlockClient({ baseUrl: `${base}/rest/v0`, streamUrl: base, nodeId: NODE, timeoutMs: 300, holdTimeoutMs: 300 })],
  [
    "with a dispatcher (undici)",
    (): BlockClient => new BlockClient({ baseUrl: `${base}/rest/v0`, streamUrl: base, nodeId: NODE, timeoutMs: 300, holdTimeoutMs: 300, dispatcher: sharedAgent }),
  ],
  [
    "with the lean HTTP/1.1 transport",
    (): BlockClient => new BlockClient({ baseUrl: `${base}/rest/v0`, streamUrl: base, nodeId: NODE, timeoutMs: 300, holdTimeoutMs: 300, transport: sharedLean }),
  ],
])("BlockClient %s", (_name, make) => {
  let client: BlockClient;
  afterEach(async () => {
    await client.close();
  });

  it("activates, posts readings and reads commands", async () => {
    client = make();
    expect(await client.activate({ userToken: "u" })).toBe("tok-1");
    expect(await client.activate()).toBeNull();
    await expect(client.data("good", { G: "0", V: 0, D: 9, DA: "21.5" })).resolves.toBeUndefined();
    expect(await client.commands("good")).toEqual([{ G: "0", V: 0, D: 1002, DA: "1", GUID: "g" }]);
  });

  it("maps 401 and 403 to unauthorized and 400 to rejected, with the server's message", async () => {
    client = make();
    const revoked = await client.data("revoked", { G: "0", V: 0, D: 9, DA: "1" }).catch((e: unknown) => e);
    expect(revoked).toBeInstanceOf(BlockClientError);
    expect(revoked).toMatchObject({ status: 401, unauthorized: true, rejected: false });
    expect((revoked as Error).message).toMatch(/answered 401: unknown block token/);
    await expect(client.data("forbidden", { G: "0", V: 0, D: 9, DA: "1" })).rejects.toMatchObject({ status: 403, unauthorized: true });
    await expect(client.data("good", { G: "0", V: 0, D: 9, DA: "" })).rejects.toMatchObject({ status: 400, rejected: true, unauthorized: false });
  });

  it("reports network errors, timeouts and aborts as status 0", async () => {
    client = make();
    const refusing = await refusingAddress();
    const closed = new BlockClient({ baseUrl: `${refusing.url}/rest/v0`, nodeId: NODE });
    await expect(closed.data("t", { G: "0", V: 0, D: 9, DA: "1" })).rejects.toMatchObject({ status: 0, unauthorized: false, rejected: false });
    await closed.close();
    await refusing.close();
    const hang = new BlockClient({ baseUrl: `${base}/hang`, nodeId: NODE, timeoutMs: 200 });
    const t0 = Date.now();
    await expect(hang.data("t", { G: "0", V: 0, D: 9, DA: "1" })).rejects.toMatchObject({ status: 0 });
    expect(Date.now() - t0).toBeLessThan(2_000);
    await hang.close();
    await expect(client.commands("good", AbortSignal.abort())).rejects.toMatchObject({ status: 0, message: expect.stringMatching(/abort/i) as unknown });
  });

  it("never puts the user token in an error message", async () => {
    const refusing = await refusingAddress();
    client = new BlockClient({ baseUrl: `${refusing.url}/rest/v0`, nodeId: NODE });
    const err = (await client.activate({ userToken: "secret-user-token" }).catch((e: unknown) => e)) as Error;
    await refusing.close();
    expect(err).toBeInstanceOf(BlockClientError);
    expect(err.message).toMatch(/ECONNREFUSED/);
    expect(err.message).not.toContain("secret-user-token");
  });
});

const sharedAgent = new Agent({ keepAliveTimeout: 10_000 });
const sharedLean = new Http1Transport();
afterAll(async () => {
  await sharedAgent.close();
  await sharedLean.close();
});
