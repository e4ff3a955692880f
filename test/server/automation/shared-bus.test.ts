import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BlockkitServer } from "../../../server/controller.js";
import { openStore } from "../../../server/store/index.js";
import { type TestServer, rest, startTestServer } from "../../helpers/server.js";
import { waitFor } from "../../helpers/wait.js";

const NODE = "SHAREDBUS001";
const CAM = `${NODE}_0_0_1004`;
const JPEG = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 1, 2, 3, 0xff, 0xd9]);

/** Two server processes' worth of services on one store and one Bus, as a scale-out deployment runs. */
describe("automation across server instances sharing the store and the Bus", () => {
  let a: TestServer;
  let b: BlockkitServer;
  let bt: string;
  const q = (): string => `user_access_token=${a.token}`;

  beforeAll(async () => {
    a = await startTestServer();
    // One server per data directory (dir-lock.ts): the second instance's store is opened without
    // an ingest thread, as a one-shot command's, which takes no lock (its events commit on its own
    // connection). Several instances for real are on PostgreSQL.
    const store = await openStore(`sqlite:${a.dir}`, { ingestThread: false });
    b = new BlockkitServer({ store, bus: a.server.services.bus, logger: pino({ level: "silent" }), pollHoldSeconds: 2 });
    await b.init();
    bt = await a.activate(NODE);
    for (const D of [5, 1002, 1004]) {
      await a.api({ method: "POST", url: `/block/${NODE}/data`, headers: { "x-service-token": bt }, payload: { G: "0", V: 0, D, DA: "0" } });
    }
  });
  afterAll(async () => {
    await b.stop();
    await a.close();
  });

  it("a rule created, suspended and deleted on one instance follows on the other", async () => {
    const res = await a.api({
      method: "POST",
      url: `/rule?${q()}`,
      payload: {
        shortName: "x",
        preconditions: [{ handler: "serviceChange", params: { guid: `${NODE}_0_0_5`, to: "1" } }],
        actions: [{ handler: "serviceSendCommand", params: { guid: `${NODE}_0_0_1002`, da: "1" } }],
      },
    });
    const rid = (res.json() as { data: { rid: string } }).data.rid;
    const engineB = b.services.automation.engine;
    await waitFor("the rule on instance b", () => engineB.watched === 1, 2000);
    // An event ingested by instance b fires the rule there.
    await b.api.inject({ method: "POST", url: rest(`/block/${NODE}/data`), headers: { "x-service-token": bt }, payload: { G: "0", V: 0, D: 5, DA: "1" } });
    await engineB.idle();
    expect(engineB.stats.fired).toBe(1);
    await a.api({ method: "POST", url: `/rule/${rid}/suspend?${q()}` });
    await waitFor("the suspension on instance b", () => engineB.watched === 0, 2000);
    await a.api({ method: "DELETE", url: `/rule/${rid}/suspend?${q()}` });
    await waitFor("the unsuspension on instance b", () => engineB.watched === 1, 2000);
    await a.api({ method: "DELETE", url: `/rule/${rid}?${q()}` });
    await waitFor("the deletion on instance b", () => engineB.watched === 0, 2000);
  });

  it("a snapshot requested on one instance is answered by an upload to the other", async () => {
    const waiting = b.stream.inject({ method: "GET", url: `/rest/v0/camera/${CAM}/snapshot?${q()}` });
    await waitFor("the snapshot command", async () => (await a.server.services.store.commands.pending(NODE, Date.now())).length > 0, 3000);
    const up = await a.server.stream.inject({ method: "POST", url: `/rest/v0/camera/${CAM}/snapshot`, headers: { "x-service-token": bt, "content-type": "image/jpeg" }, payload: JPEG });
    expect(up.statusCode).toBe(200);
    const res = await waiting;
    expect(res.statusCode).toBe(200);
    expect(res.rawPayload.equals(JPEG)).toBe(true);
  });
});
