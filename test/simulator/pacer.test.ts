/** The user token's pacer alone (fake timers): a bucket of one second's worth, refilled at the rate. */
import { afterEach, describe, expect, it, vi } from "vitest";
import { CredentialPacer } from "../../simulator/fleet/pacer.js";
import { scenarioPart } from "../../simulator/part.js";
import { parseScenarioText, validateScenario } from "../../simulator/scenario/parse.js";

afterEach(() => vi.useRealTimers());

describe("CredentialPacer", () => {
  it("grants one second's worth at once, then the rate: never more than rate × (1 + t) in t seconds", () => {
    let now = 0;
    const p = new CredentialPacer(100, () => now);
    let granted = 0;
    while (p.tryTake()) granted++;
    expect(granted).toBe(100);
    now = 250;
    while (p.tryTake()) granted++;
    expect(granted).toBe(125);
    // Idle for a minute: the bucket holds one second's worth, not sixty.
    now = 60_250;
    let after = 0;
    while (p.tryTake()) after++;
    expect(after).toBe(100);
  });

  it("take() waits its turn in order, at the rate, and stop() releases the waiters", async () => {
    vi.useFakeTimers({ now: 0 });
    const p = new CredentialPacer(10);
    for (let i = 0; i < 10; i++) expect(p.tryTake()).toBe(true);
    const done: number[] = [];
    const waits = [0, 1, 2].map((i) => p.take().then(() => done.push(i)));
    // A caller that did not wait does not jump the queue.
    expect(p.tryTake()).toBe(false);
    await vi.advanceTimersByTimeAsync(99);
    expect(done).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(done).toEqual([0]);
    await vi.advanceTimersByTimeAsync(100);
    expect(done).toEqual([0, 1]);
    const late = p.take().then(() => done.push(3));
    p.stop();
    await Promise.all([...waits, late]);
    expect(done).toEqual([0, 1, 2, 3]);
    expect(vi.getTimerCount()).toBe(0);
  });

  it("a take() whose signal aborts gives up its place at once", async () => {
    vi.useFakeTimers({ now: 0 });
    const p = new CredentialPacer(1);
    expect(p.tryTake()).toBe(true);
    const ac = new AbortController();
    const t = p.take(ac.signal);
    ac.abort();
    await t;
    await vi.advanceTimersByTimeAsync(1000);
    expect(p.tryTake()).toBe(true);
  });

  it("0 paces nothing; a rate that is not a number of 0 or more is refused, naming it", () => {
    const p = new CredentialPacer(0);
    for (let i = 0; i < 10_000; i++) expect(p.tryTake()).toBe(true);
    expect(() => new CredentialPacer(-1)).toThrow(/perSecond must be a number of 0 or more, got -1/);
    expect(() => new CredentialPacer(Number.NaN)).toThrow(/got NaN/);
  });
});

describe("scenario rate_limit", () => {
  it("defaults to the server's documented 1,000 requests/s and is shared out over the parts", () => {
    const s = parseScenarioText(JSON.stringify({ devices: [{ type: "relay" }] }));
    expect(s.rate_limit).toEqual({ requests_per_s: 1000 });
    expect(scenarioPart(s, { index: 1, count: 4 }).rate_limit).toEqual({ requests_per_s: 250 });
    expect(validateScenario({ devices: [{ type: "relay" }], rate_limit: { requests_per_s: 0 } }).rate_limit.requests_per_s).toBe(0);
    expect(() => validateScenario({ devices: [{ type: "relay" }], rate_limit: { requests_per_s: -5 } })).toThrow();
  });
});
