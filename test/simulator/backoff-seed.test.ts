/**
 * The blocks' agents' waits after failures come from the run's seed (docs/simulator.md, "Scenario
 * files"): a server double on loopback answers 503 to everything but a block's third activation
 * request, so each block's activation fails twice, then its uplink and its commands poll fail on
 * and on. The fleet's blockSleep seam records every wait, by block and loop, and ends it at once
 * (a loop's fourth wait lasts until the stop): no real time is waited. The same seed must give the
 * same waits, in one fleet or split in two parts; another seed, other waits.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { BackoffLoop } from "../../gateway/agent/index.js";
import { ApiClient } from "../../protocol/api-client.js";
import { Fleet } from "../../simulator/fleet/fleet.js";
import { Metrics } from "../../simulator/metrics/metrics.js";
import { scenarioPart } from "../../simulator/part.js";
import type { FleetPart } from "../../simulator/report.js";
import { validateScenario } from "../../simulator/scenario/parse.js";
import { waitFor } from "../helpers/wait.js";

const BLOCKS = 4;
/** Waits recorded per loop: activation fails twice, then answers; the uplink and the poll fail on. */
const WAITS: Record<BackoffLoop, number> = { activate: 2, uplink: 3, poll: 3 };

/** Each block's waits (by its index in the scenario), per loop, in order. */
type Waits = Record<number, Record<BackoffLoop, number[]>>;

describe("the blocks' backoff jitter and the run's seed", () => {
  let server: Server;
  let baseUrl: string;
  const activations = new Map<string, number>();

  beforeEach(async () => {
    server = createServer((req, res) => {
      const node = /\/block\/([A-Za-z0-9]+)\/activate/.exec(req.url ?? "")?.[1];
      const n = node ? (activations.get(node) ?? 0) + 1 : 0;
      if (node) activations.set(node, n);
      req.resume();
      if (node && n > WAITS.activate) {
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ token: `token${node}` }));
        return;
      }
      res.writeHead(503, { "content-type": "application/json" }).end(JSON.stringify({ result: 0, id: 0, error: "shutting down" }));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/rest/v0`;
  });

  afterEach(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  /** Runs the fleet (or one part of it) until every block's loops have waited WAITS times; returns the waits. */
  const run = async (seed: number, part: FleetPart | null = null): Promise<Waits> => {
    const scenario = validateScenario({ seed, blocks: { count: BLOCKS }, devices: [{ type: "relay" }], rate_limit: { requests_per_s: 0 } });
    const waits: Waits = {};
    // Each run's blocks are refused activation twice anew (same node ids for the same seed).
    activations.clear();
    const fleet = new Fleet({
      scenario: scenarioPart(scenario, part),
      part,
      baseUrl,
      userToken: "user-token",
      api: new ApiClient({ baseUrl, token: "user-token" }),
      metrics: new Metrics(),
      log: () => undefined,
      onCommand: () => undefined,
      blockSleep: (block, ms, signal, loop) => {
        const mine = (waits[block] ??= { activate: [], uplink: [], poll: [] })[loop];
        if (mine.length >= WAITS[loop]) return new Promise((resolve) => signal.addEventListener("abort", () => resolve(), { once: true }));
        mine.push(ms);
        return Promise.resolve();
      },
    });
    try {
      fleet.start();
      const planned = Array.from({ length: BLOCKS }, (_v, i) => i).filter((i) => !part || i % part.count === part.index);
      await waitFor(`every loop of blocks ${planned.join(", ")} waited`, () => planned.every((i) => (Object.keys(WAITS) as BackoffLoop[]).every((l) => waits[i]?.[l].length === WAITS[l])), 10_000);
    } finally {
      await fleet.stop();
    }
    return waits;
  };

  it("the same seed gives each block the same waits, whatever part of the fleet runs it; another seed, others", { timeout: 30_000 }, async () => {
    const first = await run(5);
    expect(Object.keys(first)).toHaveLength(BLOCKS);
    // Full jitter under the blocks' backoff (0.5 s doubling): the n-th wait of a loop is below 500 * 2^n.
    for (const loops of Object.values(first)) {
      for (const ms of Object.values(loops)) ms.forEach((w, n) => expect(w).toBeLessThan(500 * 2 ** n));
    }
    // Before: Math.random, so two runs of one seed waited differently.
    expect(await run(5)).toEqual(first);
    // --workers 2 or --shard i/2: block i runs in part i % 2, with the same stream as in the whole fleet.
    expect({ ...(await run(5, { index: 0, count: 2 })), ...(await run(5, { index: 1, count: 2 })) }).toEqual(first);
    const other = await run(6);
    for (let i = 0; i < BLOCKS; i++) expect(other[i]).not.toEqual(first[i]);
  });
});
