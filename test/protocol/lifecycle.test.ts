/** The shared lifecycle: start in order, stop in reverse, isolated stops, failed and cancelled starts. */
import { describe, expect, it } from "vitest";
import { Lifecycle, type Part, StartCancelled, StopError } from "../../protocol/lifecycle.js";

function recorder() {
  const calls: string[] = [];
  const logs: { level: string; msg: string; obj: Record<string, unknown> }[] = [];
  const log = {
    info: (obj: object, msg: string) => void logs.push({ level: "info", msg, obj: obj as Record<string, unknown> }),
    error: (obj: object, msg: string) => void logs.push({ level: "error", msg, obj: obj as Record<string, unknown> }),
  };
  const part = (name: string, how: { startThrows?: boolean; stopThrows?: boolean } = {}): Part => ({
    name,
    start: async () => {
      calls.push(`start ${name}`);
      if (how.startThrows) throw new Error(`${name} cannot start`);
    },
    stop: () => {
      calls.push(`stop ${name}`);
      if (how.stopThrows) throw new Error(`${name} cannot stop`);
    },
  });
  return { calls, logs, log, part };
}

describe("Lifecycle", () => {
  it("starts parts in order and stops them in reverse, then logs stopped", async () => {
    const r = recorder();
    const l = new Lifecycle(r.log).add(r.part("a"), r.part("b"), { name: "no stop", start: () => r.calls.push("start c") });
    await l.start();
    await l.stop();
    expect(r.calls).toEqual(["start a", "start b", "start c", "stop b", "stop a"]);
    expect(r.logs.at(-1)).toMatchObject({ level: "info", msg: "stopped" });
    // A second stop is the same stop.
    await l.stop();
    expect(r.calls).toHaveLength(5);
  });

  it("stops every part when some stops throw, and names those in a StopError", async () => {
    const r = recorder();
    const l = new Lifecycle(r.log).add(r.part("store"), r.part("b", { stopThrows: true }), r.part("c", { stopThrows: true }));
    await l.start();
    const err = await l.stop().then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(StopError);
    expect((err as StopError).parts).toEqual(["c", "b"]);
    expect((err as StopError).errors.map((e: Error) => e.message)).toEqual(["c cannot stop", "b cannot stop"]);
    expect(r.calls).toEqual(["start store", "start b", "start c", "stop c", "stop b", "stop store"]);
    expect(r.logs.filter((x) => x.level === "error").map((x) => x.obj.part)).toEqual(["c", "b"]);
    expect(r.logs.at(-1)).toMatchObject({ msg: "stopped", obj: { failed: ["c", "b"] } });
  });

  it("a failed start stops what had started, rejects with the part's error, and stop() afterwards stops nothing twice", async () => {
    const r = recorder();
    const l = new Lifecycle(r.log).add(r.part("a"), r.part("b"), r.part("c", { startThrows: true }), r.part("d"));
    await expect(l.start()).rejects.toThrow("c cannot start");
    expect(r.calls).toEqual(["start a", "start b", "start c", "stop b", "stop a"]);
    await l.stop();
    expect(r.calls).toHaveLength(5);
  });

  it("stop() during a start aborts its signal, stops what started and, once it returns, the part that was starting", async () => {
    const r = recorder();
    let release!: () => void;
    let seen: AbortSignal | undefined;
    const slow: Part = {
      name: "slow",
      start: (signal) => {
        seen = signal;
        r.calls.push("start slow");
        return new Promise<void>((done) => (release = done));
      },
      stop: () => void r.calls.push("stop slow"),
    };
    const l = new Lifecycle(r.log).add(r.part("a"), slow, r.part("never"));
    const started = l.start();
    await expect.poll(() => r.calls.includes("start slow")).toBe(true);
    await l.stop();
    await expect(started).rejects.toBeInstanceOf(StartCancelled);
    expect(seen?.aborted).toBe(true);
    expect(r.calls).toEqual(["start a", "start slow", "stop a"]);
    release();
    await expect.poll(() => r.calls.at(-1)).toBe("stop slow");
    expect(r.calls).not.toContain("start never");
  });

  it("start() after stop() is cancelled at once; start() twice is refused", async () => {
    const r = recorder();
    const l = new Lifecycle(r.log).add(r.part("a"));
    await l.stop();
    await expect(l.start()).rejects.toBeInstanceOf(StartCancelled);
    expect(r.calls).toEqual([]);
    await expect(l.start()).rejects.toThrow(/twice/);
  });
});
