import { describe, expect, it } from "vitest";
import { PausableClock, summarisePairs } from "../../bench/fixtures/paired.js";
import { median } from "../../bench/lib.js";

describe("PausableClock", () => {
  it("stands still while paused and goes on from there, never jumping", () => {
    let t = 1000;
    const c = new PausableClock(() => t);
    expect(c.now()).toBe(1000);
    t = 1500;
    c.pause();
    expect(c.paused).toBe(true);
    t = 4000;
    expect(c.now()).toBe(1500);
    c.pause(); // a second pause keeps the first instant
    t = 4500;
    expect(c.now()).toBe(1500);
    c.resume();
    expect(c.paused).toBe(false);
    expect(c.now()).toBe(1500);
    t = 4600;
    expect(c.now()).toBe(1600);
    c.resume(); // not paused: nothing changes
    expect(c.now()).toBe(1600);
    c.pause();
    t = 5600;
    c.resume();
    t = 5700;
    expect(c.now()).toBe(1700);
  });

  it("works detached from its object (SimRunner's clock option is called bare)", () => {
    let t = 10;
    const c = new PausableClock(() => t);
    const now = c.now;
    c.pause();
    t = 20;
    expect(now()).toBe(10);
  });
});

describe("summarisePairs", () => {
  it("takes one ratio per pair of µs per event and their median, quartiles and range", () => {
    const w = (us: number, acked = 1000) => ({ cpuUs: us * acked, acked });
    const s = summarisePairs([
      { sim: w(40), bare: w(20) }, // 2
      { sim: w(30), bare: w(20) }, // 1.5
      { sim: w(60), bare: w(20) }, // 3
      { sim: w(50, 500), bare: w(25, 2000) }, // 2, whatever the counts
    ]);
    expect(s.ratios).toEqual([2, 1.5, 3, 2]);
    expect(s.median).toBe(2);
    expect(s.q1).toBe(1.875);
    expect(s.q3).toBe(2.25);
    expect(s.min).toBe(1.5);
    expect(s.max).toBe(3);
    expect(s.simUs).toBe(45);
    expect(s.bareUs).toBe(20);
  });

  it("takes the mean of the two middle values for an even count, as the bench's median does everywhere", () => {
    const w = (us: number) => ({ cpuUs: us * 100, acked: 100 });
    const s = summarisePairs([
      { sim: w(30), bare: w(20) }, // 1.5
      { sim: w(50), bare: w(20) }, // 2.5
    ]);
    expect(s.median).toBe(2);
    expect(s.median).toBe(median(s.ratios));
    expect(s.q1).toBe(1.75);
    expect(s.simUs).toBe(40);
  });

  it("leaves a pair whose window acknowledged nothing out of the figures", () => {
    const s = summarisePairs([
      { sim: { cpuUs: 4000, acked: 100 }, bare: { cpuUs: 2000, acked: 100 } },
      { sim: { cpuUs: 4000, acked: 0 }, bare: { cpuUs: 2000, acked: 100 } },
    ]);
    expect(s.ratios[1]).toBeNaN();
    expect(s.median).toBe(2);
    expect(s.min).toBe(2);
    expect(s.max).toBe(2);
    expect(s.simUs).toBe(40);
  });
});
