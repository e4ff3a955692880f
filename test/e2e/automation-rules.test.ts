import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type LiveServer, startLive } from "../helpers/live.js";
import { waitFor } from "../helpers/wait.js";
import { TestBlock, call } from "./automation-helpers.js";

describe("automation end to end: rules over real HTTP", () => {
  let live: LiveServer;
  let block: TestBlock;
  const q = (): string => `user_access_token=${live.token}`;
  const BUTTON = "E2ERULES0001_0_0_5";
  const RELAY = "E2ERULES0001_0_0_1002";

  beforeAll(async () => {
    live = await startLive();
    block = new TestBlock(live, "E2ERULES0001");
    await block.activate();
    await block.data(5, "0");
    await block.data(1002, "0");
  });
  afterAll(async () => {
    await live.close();
  });

  it("a rule turns a button press into a command received on the block's long-poll", async () => {
    const created = await call("POST", `${live.baseUrl}/rule?${q()}`, {
      json: {
        shortName: "Press to switch",
        preconditions: [{ handler: "serviceChange", params: { guid: BUTTON, to: "1" } }],
        actions: [{ handler: "serviceSendCommand", params: { guid: RELAY, da: "1" } }],
      },
    });
    expect(created.json()).toMatchObject({ result: 1, data: { rid: expect.stringMatching(/^\d+$/) } });
    // The block is already waiting on its long-poll when the button is pressed.
    const polled = block.commands();
    await block.data(5, "1");
    expect(await polled).toEqual([{ G: "0", V: 0, D: 1002, DA: "1", GUID: RELAY }]);
    const rid = created.json<{ data: { rid: string } }>().data.rid;
    await call("DELETE", `${live.baseUrl}/rule/${rid}?${q()}`);
  });

  it("a tickle fires a rule; deleting the sub-device leaves the rule in place and harmless", async () => {
    const hooks = (await call("GET", `${live.authUrl}/auth/webhook?${q()}`)).json<{ data: { guid: string } }>().data.guid;
    const sub = await call("POST", `${live.baseUrl}/device/${hooks}/subdevice?${q()}`, {
      json: { category: "webhook", type: "sensor", shortName: "Doorbell", data: "ring" },
    });
    const { id, token } = sub.json<{ data: { id: string; token: string } }>().data;
    const created = await call("POST", `${live.baseUrl}/rule?${q()}`, {
      json: {
        shortName: "Ring to relay",
        preconditions: [{ handler: "serviceChange", params: { guid: hooks, to: "ring" } }],
        actions: [{ handler: "serviceSendCommand", params: { guid: RELAY, da: "rang" } }],
      },
    });
    const rid = created.json<{ data: { rid: string } }>().data.rid;
    const polled = block.commands();
    const tickle = await call("POST", `${live.baseUrl}/device/${hooks}/subdevice/${id}/tickle/${token}`);
    expect(tickle.json()).toEqual({ result: 1, error: null, id: 0 });
    expect((await polled).map((c) => c.DA)).toEqual(["rang"]);

    expect((await call("DELETE", `${live.baseUrl}/device/${hooks}/subdevice/${id}?${q()}`)).status).toBe(200);
    expect((await call("POST", `${live.baseUrl}/device/${hooks}/subdevice/${id}/tickle/${token}`)).status).toBe(401);
    // The run history is written a few ms after the run, off the command's path: wait for it, bounded.
    const rule = await waitFor("the rule's run in its history", async () => {
      const r = await call("GET", `${live.baseUrl}/rule/${rid}?${q()}`);
      return r.json<{ data: { history: unknown[] } }>().data.history.length > 0 ? r : undefined;
    }, 5000);
    expect(rule.json()).toMatchObject({ result: 1, data: { rid: Number(rid), suspended: false, history: [{ ok: true }] } });
  });
});
