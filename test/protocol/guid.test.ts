import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isNodeId, makeGuid, parseGuid } from "../../protocol/guid.js";

describe("GUIDs and node ids", () => {
  it("builds <node>_<G>_<V>_<D> and parses it back", () => {
    const a = { node: "ABCDEF123456", G: "0201", V: 0, D: 31 };
    expect(makeGuid(a)).toBe("ABCDEF123456_0201_0_31");
    expect(parseGuid("ABCDEF123456_0201_0_31")).toEqual(a);
  });

  it("round-trips every valid address", () => {
    const alnum = fc.stringMatching(/^[A-Za-z0-9]+$/);
    fc.assert(
      fc.property(
        alnum.filter((s) => s.length >= 12 && s.length <= 64),
        alnum.filter((s) => s.length >= 1 && s.length <= 32),
        fc.integer({ min: 0, max: 999_999_999 }),
        fc.integer({ min: 0, max: 999_999_999 }),
        (node, G, V, D) => {
          expect(parseGuid(makeGuid({ node, G, V, D }))).toEqual({ node, G, V, D });
        },
      ),
      { numRuns: 200 },
    );
  });

  it.each([
    ["short node", "ABCDEF12345_0_0_9"],
    ["node with a dash", "ABCDEF-123456_0_0_9"],
    ["missing D", "ABCDEF123456_0_0"],
    ["non-numeric V", "ABCDEF123456_0_x_9"],
    ["empty port", "ABCDEF123456__0_9"],
    ["port with punctuation", "ABCDEF123456_a.b_0_9"],
    ["negative D", "ABCDEF123456_0_0_-9"],
    ["trailing text", "ABCDEF123456_0_0_9_1"],
    ["empty", ""],
  ])("refuses %s", (_name, text) => {
    expect(parseGuid(text)).toBeNull();
  });

  it("accepts node ids of 12 to 64 alphanumeric characters only", () => {
    expect(isNodeId("ABCDEF123456")).toBe(true);
    expect(isNodeId("a".repeat(64))).toBe(true);
    expect(isNodeId("ABCDEF12345")).toBe(false);
    expect(isNodeId("a".repeat(65))).toBe(false);
    expect(isNodeId("ABCDEF 123456")).toBe(false);
    expect(isNodeId("ABCDEF_123456")).toBe(false);
    expect(isNodeId("ÄBCDEF123456")).toBe(false);
  });
});
