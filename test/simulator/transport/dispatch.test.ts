/**
 * The promise-free call of the simulator's readings (BlockTransport.dispatch) over a real HTTP
 * server on loopback: Http1Transport.dispatch, the simulated block's link (SimLink) counting what it
 * counts for send(), and BlockClient.dataTo mapping answers to PostCallbacks.
 */
import { once } from "node:events";
import { type Server, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type BlockClientError, type PostCallbacks } from "../../../protocol/block-client.js";
import type { TransportCallbacks, TransportResponse } from "../../../protocol/transport.js";
import { SimBlockClient } from "../../../simulator/fleet/client.js";
import { fleetTransport } from "../../../simulator/fleet/transport.js";
import { Http1Transport } from "../../../simulator/transport/http1-transport.js";

let server: Server;
let origin: string;
/** Statuses the next readings are answered with, in order (then 200); `hold` answers never. */
const script: (number | "hold")[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      const next = script.shift() ?? 200;
      if (next === "hold") return;
      const headers: Record<string, string> = { "content-type": "application/json" };
      if (next === 429) headers["retry-after"] = "1";
      res.writeHead(next, headers).end(JSON.stringify(next === 200 ? { result: 1, error: null, id: 0 } : { result: 0, error: `status ${next}`, id: 0 }));
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

/** Callbacks that record their outcome and whether it came inside the dispatching call. */
function recorder(): { cb: TransportCallbacks; outcome: Promise<{ res?: TransportResponse; err?: Error; inCall: boolean }>; returned(): void } {
  let inCall = true;
  let settle!: (o: { res?: TransportResponse; err?: Error; inCall: boolean }) => void;
  const outcome = new Promise<{ res?: TransportResponse; err?: Error; inCall: boolean }>((r) => (settle = r));
  return {
    cb: { answered: (res) => settle({ res, inCall }), failed: (err) => settle({ err, inCall }) },
    outcome,
    returned: () => (inCall = false),
  };
}

const reading = (url: string, signal?: AbortSignal) => ({ method: "POST" as const, url, headers: { "content-type": "application/json" }, body: "{}", timeoutMs: 5_000, signal, idempotent: true });

describe("Http1Transport.dispatch", () => {
  it("hands an answer to the callbacks, never inside the call", async () => {
    const t = new Http1Transport({ connections: 2, pipelining: 4 });
    try {
      const r = recorder();
      t.dispatch(reading(`${origin}/rest/v0/block/DISPATCHTEST1/data`), r.cb);
      r.returned();
      const o = await r.outcome;
      expect(o.res?.status).toBe(200);
      expect(o.inCall).toBe(false);
    } finally {
      t.destroy();
    }
  });

  it("fails a request that cannot leave on a microtask, with what is wrong", async () => {
    const t = new Http1Transport();
    const https = recorder();
    t.dispatch(reading("https://127.0.0.1:1/rest/v0/block/DISPATCHTEST1/data"), https.cb);
    https.returned();
    const aborted = recorder();
    const ac = new AbortController();
    ac.abort(new Error("stopped"));
    t.dispatch(reading(`${origin}/rest/v0/block/DISPATCHTEST1/data`, ac.signal), aborted.cb);
    aborted.returned();
    t.destroy();
    const closed = recorder();
    t.dispatch(reading(`${origin}/rest/v0/block/DISPATCHTEST1/data`), closed.cb);
    closed.returned();
    const [a, b, c] = await Promise.all([https.outcome, aborted.outcome, closed.outcome]);
    expect(a.err?.message).toMatch(/plain http only/);
    expect(b.err?.message).toBe("stopped");
    expect(c.err?.message).toMatch(/transport is closed/);
    expect([a.inCall, b.inCall, c.inCall]).toEqual([false, false, false]);
  });

  it("fails a call in flight when its signal aborts, after abort() returned, and the connection carries the next", async () => {
    const t = new Http1Transport({ connections: 1 });
    try {
      script.push("hold");
      const ac = new AbortController();
      const held = recorder();
      t.dispatch(reading(`${origin}/rest/v0/block/DISPATCHTEST1/data`, ac.signal), held.cb);
      held.returned();
      // Wait until the request is on the wire (the server got it), then abort.
      await new Promise<void>((resolve) => server.once("request", () => resolve()));
      let inAbort = true;
      const seen = held.outcome.then((o) => ({ ...o, inAbort }));
      ac.abort(new Error("link dropped"));
      inAbort = false;
      const o = await seen;
      expect(o.err?.message).toBe("link dropped");
      expect(o.inAbort).toBe(false);
      const next = recorder();
      t.dispatch(reading(`${origin}/rest/v0/block/DISPATCHTEST1/data`), next.cb);
      expect((await next.outcome).res?.status).toBe(200);
    } finally {
      t.destroy();
    }
  });
});

describe("the fleet's transport", () => {
  it("dispatches a reading to its own client and a held call to undici, never inside the call", async () => {
    const fleet = fleetTransport(2, 4);
    try {
      const dispatch = fleet.transport.dispatch?.bind(fleet.transport);
      expect(dispatch).toBeTypeOf("function");
      const data = recorder();
      (dispatch as NonNullable<typeof dispatch>)(reading(`${origin}/rest/v0/block/DISPATCHTEST1/data`), data.cb);
      data.returned();
      const held = recorder();
      (dispatch as NonNullable<typeof dispatch>)({ method: "GET", url: `${origin}/rest/v0/block/DISPATCHTEST1/commands`, headers: {}, timeoutMs: 5_000 }, held.cb);
      held.returned();
      const [d, h] = await Promise.all([data.outcome, held.outcome]);
      expect([d.res?.status, h.res?.status]).toEqual([200, 200]);
      expect([d.inCall, h.inCall]).toEqual([false, false]);
    } finally {
      await fleet.close();
    }
  });
});

describe("BlockClient.dataTo over the simulated block's link", () => {
  it("posts on 2xx; fails with the status and counts it on anything else, throttling apart", async () => {
    const errors: string[] = [];
    const throttled: string[] = [];
    const transport = new Http1Transport({ connections: 2, pipelining: 4 });
    const client = new SimBlockClient({ baseUrl: `${origin}/rest/v0`, nodeId: "DISPATCHTEST1", transport }, { error: (k) => errors.push(k), throttled: (k) => throttled.push(k) });
    const outcomes: (number | "posted")[] = [];
    let settle: () => void = () => {};
    const done: PostCallbacks = {
      posted: () => {
        outcomes.push("posted");
        settle();
      },
      postFailed: (err: BlockClientError) => {
        outcomes.push(err.status);
        settle();
      },
    };
    const post = (): Promise<void> =>
      new Promise((resolve) => {
        settle = resolve;
        client.dataTo("block-token", { G: "1", V: 0, D: 9, DA: "21.5", KEY: `k${outcomes.length}` }, undefined, done);
      });
    try {
      script.push(503, 429);
      await post();
      await post();
      await post();
      expect(outcomes).toEqual([503, 429, "posted"]);
      expect(errors).toEqual(["uplink_http_503"]);
      expect(throttled).toEqual(["uplink"]);
    } finally {
      transport.destroy();
    }
  });
});
