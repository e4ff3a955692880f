/**
 * AbortWatch keeps the calls in flight of each signal in a list threaded through the calls; a
 * signal's abort reaches exactly the calls added and not yet deleted. Checked against a Set as the
 * model over random adds, deletes (twice, too) and aborts.
 */
import { describe, expect, it } from "vitest";
import { AbortWatch, type WatchList, type WatchedCall } from "../../protocol/abort-watch.js";
import { Random } from "../../simulator/random.js";

class Call implements WatchedCall {
  watchPrev: WatchedCall | null = null;
  watchNext: WatchedCall | null = null;
  list: WatchList | null = null;
  constructor(readonly id: number) {}
}

describe("AbortWatch", () => {
  it("aborts the calls still watched, each once, with the signal's reason", () => {
    const aborted: [number, string][] = [];
    const watch = new AbortWatch<Call>((c, reason) => aborted.push([c.id, reason.message]));
    const ac = new AbortController();
    const calls = [1, 2, 3, 4].map((id) => new Call(id));
    for (const c of calls) c.list = watch.add(ac.signal, c);
    watch.delete(calls[1]?.list as WatchList, calls[1] as Call);
    watch.delete(calls[1]?.list as WatchList, calls[1] as Call); // twice: harmless
    watch.delete(calls[3]?.list as WatchList, calls[3] as Call); // the newest (the list's head)
    ac.abort(new Error("stopped"));
    expect(aborted.sort()).toEqual([
      [1, "stopped"],
      [3, "stopped"],
    ]);
    // An aborted signal watches nothing more.
    expect(watch.add(ac.signal, new Call(5))).toBeNull();
  });

  it("matches a Set of the calls in flight over random adds, deletes and aborts", () => {
    const rng = new Random(42);
    for (let round = 0; round < 50; round++) {
      const aborted = new Set<number>();
      const watch = new AbortWatch<Call>((c) => aborted.add(c.id));
      const signals = Array.from({ length: 4 }, () => new AbortController());
      const model = signals.map(() => new Set<number>());
      const live: { call: Call; s: number }[] = [];
      let next = 0;
      for (let step = 0; step < 200; step++) {
        const r = rng.uniform(0, 1);
        if (r < 0.55 || live.length === 0) {
          const s = Math.floor(rng.uniform(0, signals.length));
          const call = new Call(next++);
          call.list = watch.add((signals[s] as AbortController).signal, call);
          if (call.list !== null) {
            (model[s] as Set<number>).add(call.id);
            live.push({ call, s });
          }
        } else {
          const k = Math.floor(rng.uniform(0, live.length));
          const { call, s } = live[k] as { call: Call; s: number };
          watch.delete(call.list as WatchList, call);
          (model[s] as Set<number>).delete(call.id);
          if (rng.uniform(0, 1) < 0.8) live.splice(k, 1); // else deleted again later
        }
      }
      for (const [s, ac] of signals.entries()) {
        aborted.clear();
        ac.abort(new Error("x"));
        expect([...aborted].sort((a, b) => a - b)).toEqual([...(model[s] as Set<number>)].sort((a, b) => a - b));
      }
    }
  });
});
