/**
 * ParentSigints (cli/respawn.ts): in the respawned simulator, the parent's forward of a SIGINT is the
 * echo of a Ctrl-C the child got itself (the terminal's reaches both) within ECHO_MS of it, and a
 * Ctrl-C of its own otherwise, a second `kill -INT PID` of the command included.
 */
import { describe, expect, it } from "vitest";
import { ParentSigints } from "../../cli/respawn.js";

describe("ParentSigints", () => {
  it("takes a forward with no SIGINT of the child's own before it as a Ctrl-C, every time", () => {
    const s = new ParentSigints(2_000);
    expect(s.forwarded(0)).toBe(true);
    expect(s.forwarded(10)).toBe(true);
  });

  it("takes one forward after each SIGINT of the child's own for its echo, then the next as a Ctrl-C", () => {
    const s = new ParentSigints(2_000);
    s.direct(100);
    expect(s.forwarded(105)).toBe(false);
    expect(s.forwarded(5_000)).toBe(true);
    s.direct(6_000);
    s.direct(6_300);
    expect(s.forwarded(6_010)).toBe(false);
    expect(s.forwarded(6_310)).toBe(false);
    expect(s.forwarded(6_400)).toBe(true);
  });

  it("does not wait past its bound for an echo (the SIGINT went to the child alone)", () => {
    const s = new ParentSigints(2_000);
    s.direct(0);
    expect(s.forwarded(2_001)).toBe(true);
  });
});
