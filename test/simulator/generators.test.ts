import { existsSync } from "node:fs";
import { chromium } from "playwright-core";
import { describe, expect, it } from "vitest";
import { makeGenerator } from "../../simulator/generators.js";
import { cameraFrame, encodeBlockJpeg } from "../../simulator/jpeg.js";
import { Random } from "../../simulator/random.js";
import type { GeneratorSpec } from "../../simulator/scenario/schema.js";

function take(spec: GeneratorSpec, seed: number, n: number, rate = 1): { delays: (number | null)[]; values: string[] } {
  const g = makeGenerator(spec, rate, new Random(seed).child("NODE000000001/1_0_9"));
  const delays: (number | null)[] = [];
  const values: string[] = [];
  for (let i = 0; i < n; i++) {
    delays.push(g.nextDelay());
    values.push(g.nextValue());
  }
  return { delays, values };
}

const sine: GeneratorSpec = { kind: "sine", min: 10, max: 20, period_s: 10, noise: 0.3, decimals: 2 };
const walk: GeneratorSpec = { kind: "walk", start: 50, step: 5, min: 40, max: 60, decimals: 1 };

describe("seeded random source", () => {
  it("repeats with the same seed and differs with another", () => {
    const a = new Random(42);
    const b = new Random(42);
    const c = new Random(43);
    const sa = Array.from({ length: 5 }, () => a.next());
    expect(Array.from({ length: 5 }, () => b.next())).toEqual(sa);
    expect(Array.from({ length: 5 }, () => c.next())).not.toEqual(sa);
    // Child streams depend on the seed and the name, not on how far the parent has run.
    const fresh = new Random(42).child("x").next();
    expect(a.child("x").next()).toBe(fresh);
    expect(a.child("y").next()).not.toBe(fresh);
  });
});

describe("value generators", () => {
  it("same seed, same values and delays; another seed, other values", () => {
    for (const spec of [sine, walk, { kind: "button", mean_interval_s: 2 } as GeneratorSpec]) {
      expect(take(spec, 1, 50)).toEqual(take(spec, 1, 50));
      expect(take(spec, 2, 50)).not.toEqual(take(spec, 1, 50));
    }
  });

  it("sine: a random phase first, then the period of the rate, values on the wave", () => {
    const { delays, values } = take({ ...sine, noise: 0 }, 3, 12, 4);
    expect(delays[0]).toBeGreaterThanOrEqual(0);
    expect(delays[0]).toBeLessThan(250);
    expect(delays.slice(1)).toEqual(new Array(11).fill(250));
    // Virtual time: reading k is at k × 250 ms, so a 10 s period gives sin(2π k/40).
    values.forEach((v, k) => expect(Number(v)).toBeCloseTo(15 + 5 * Math.sin((2 * Math.PI * k) / 40), 2));
    expect(values[0]).toMatch(/^\d+\.\d{2}$/);
  });

  it("random walk stays within its bounds and steps", () => {
    const { values } = take(walk, 5, 2000);
    const nums = values.map(Number);
    expect(Math.min(...nums)).toBeGreaterThanOrEqual(40);
    expect(Math.max(...nums)).toBeLessThanOrEqual(60);
    for (let i = 1; i < nums.length; i++) expect(Math.abs((nums[i] as number) - (nums[i - 1] as number))).toBeLessThanOrEqual(5.05);
    expect(new Set(values).size).toBeGreaterThan(20);
  });

  it("button presses are Poisson arrivals with the given mean", () => {
    const { delays, values } = take({ kind: "button", mean_interval_s: 2 }, 9, 5000);
    const mean = (delays as number[]).reduce((a, b) => a + b, 0) / delays.length;
    expect(mean).toBeGreaterThan(1900);
    expect(mean).toBeLessThan(2100);
    expect(new Set(values)).toEqual(new Set(["1"]));
  });

  it("RF codes come from the list; actuators and cameras never report on their own", () => {
    const codes = ["0101010101010101", "A1B2"];
    const { values } = take({ kind: "rf", codes, mean_interval_s: 1 }, 4, 200);
    expect(new Set(values)).toEqual(new Set(codes));
    const relay = makeGenerator({ kind: "actuator", initial: "0" }, 1, new Random(1));
    expect([relay.nextDelay(), relay.initial()]).toEqual([null, "0"]);
    const cam = makeGenerator({ kind: "camera", width: 64, height: 48 }, 1, new Random(1));
    expect([cam.nextDelay(), cam.initial()]).toEqual([null, null]);
    const constant = makeGenerator({ kind: "constant", value: 7 }, 0, new Random(1));
    expect(constant.nextDelay()).toBeNull();
  });
});

describe("camera JPEG", () => {
  it("has the JPEG structure and refuses sizes that are not multiples of 8", () => {
    const jpg = cameraFrame(64, 48, 0);
    expect([...jpg.subarray(0, 2)]).toEqual([0xff, 0xd8]);
    expect([...jpg.subarray(-2)]).toEqual([0xff, 0xd9]);
    const sof = jpg.indexOf(Buffer.from([0xff, 0xc0]));
    expect(jpg.readUInt16BE(sof + 5)).toBe(48);
    expect(jpg.readUInt16BE(sof + 7)).toBe(64);
    expect(cameraFrame(64, 48, 1).equals(jpg)).toBe(false);
    expect(() => encodeBlockJpeg(60, 48, () => 0)).toThrow(/multiples of 8/);
  });

  it("decodes in a real browser to the pixels it was built from", { timeout: 30_000 }, async () => {
    const executablePath = ["/usr/bin/chromium", "/usr/bin/chromium-browser"].find((p) => existsSync(p));
    expect(executablePath, "chromium is needed to decode the JPEG").toBeDefined();
    const browser = await chromium.launch({ executablePath, args: ["--no-sandbox"] });
    try {
      const page = await browser.newPage();
      const shades = [0, 255, 128, 37];
      const jpg = encodeBlockJpeg(16, 16, (bx, by) => shades[by * 2 + bx] as number);
      // The page script is plain JavaScript run by the browser (no DOM types in this project).
      const got = (await page.evaluate(`(async () => {
        const img = new Image();
        img.src = "data:image/jpeg;base64,${jpg.toString("base64")}";
        await img.decode();
        const c = document.createElement("canvas");
        c.width = img.naturalWidth;
        c.height = img.naturalHeight;
        const ctx = c.getContext("2d");
        ctx.drawImage(img, 0, 0);
        const px = (x, y) => ctx.getImageData(x, y, 1, 1).data[0];
        return { w: img.naturalWidth, h: img.naturalHeight, px: [px(4, 4), px(12, 4), px(4, 12), px(12, 12)] };
      })()`)) as { w: number; h: number; px: number[] };
      expect(got.w).toBe(16);
      expect(got.h).toBe(16);
      got.px.forEach((p, i) => expect(Math.abs(p - (shades[i] as number))).toBeLessThanOrEqual(2));
    } finally {
      await browser.close();
    }
  });
});
