/**
 * HandedOut (server/services/handed-out.ts), the commands on their way to a block: by id and by
 * node, each for at most its bound, forgotten when settled or expired, expiry in hand-out order.
 */
import { describe, expect, it } from "vitest";
import { HandedOut } from "../../server/services/handed-out.js";

describe("HandedOut", () => {
  it("knows a command and its node until it is settled", () => {
    let now = 0;
    const h = new HandedOut(() => now, 1_000);
    h.add(1, "NODEA0000001");
    h.add(2, "NODEA0000001");
    h.add(3, "NODEB0000001");
    expect([h.has(1), h.has(2), h.has(3), h.has(4)]).toEqual([true, true, true, false]);
    expect(h.settle(1)).toBe("NODEA0000001");
    expect(h.settle(1)).toBeUndefined();
    expect(h.hasNode("NODEA0000001")).toBe(true);
    expect(h.settle(2)).toBe("NODEA0000001");
    expect(h.hasNode("NODEA0000001")).toBe(false);
    expect(h.hasNode("NODEB0000001")).toBe(true);
    now = 10;
    expect(h.size).toBe(1);
  });

  it("lets a command go past its bound, and expire() names the nodes of those that went, oldest first", () => {
    let now = 0;
    const h = new HandedOut(() => now, 1_000);
    h.add(1, "NODEA0000001");
    now = 500;
    h.add(2, "NODEB0000001");
    now = 1_000;
    expect(h.has(1)).toBe(false);
    expect(h.hasNode("NODEA0000001")).toBe(false);
    expect(h.expire()).toBeNull();
    now = 1_600;
    expect([...(h.expire() ?? [])]).toEqual(["NODEB0000001"]);
    expect(h.size).toBe(0);
  });

  it("counts a command handed out again once, with a new bound", () => {
    let now = 0;
    const h = new HandedOut(() => now, 1_000);
    h.add(1, "NODEA0000001");
    now = 900;
    h.add(1, "NODEA0000001");
    now = 1_500;
    expect(h.expire()).toBeNull();
    expect(h.has(1)).toBe(true);
    expect(h.settle(1)).toBe("NODEA0000001");
    expect(h.hasNode("NODEA0000001")).toBe(false);
  });
});
