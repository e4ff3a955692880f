/** The fake serial node's profiles against the measured behaviour of the original firmwares (fake timers). */
import { afterEach, describe, expect, it, vi } from "vitest";
import { encodeCommand } from "../../protocol/serial-frames.js";
import { SerialNode, type SerialNodeOptions } from "../../simulator/nodes/serial-node.js";

afterEach(() => vi.useRealTimers());

/** A node with its port open, booted: returns it and the lines it wrote. */
async function booted(profile: SerialNodeOptions["profile"], extra: Partial<SerialNodeOptions> = {}): Promise<{ node: SerialNode; out: string[] }> {
  vi.useFakeTimers();
  const out: string[] = [];
  const node = new SerialNode({ profile, write: (t) => out.push(t), ...extra });
  node.start();
  node.portOpened();
  await vi.advanceTimersByTimeAsync(1_800);
  return { node, out };
}

const cmd = (D: number, DA: string, G = "0"): string => encodeCommand({ G, V: 0, D, DA });

describe("SerialNode 0.47", () => {
  it("is deaf for 1.8 s after the open resets it, and what it sent before the open is lost", async () => {
    vi.useFakeTimers();
    const out: string[] = [];
    const node = new SerialNode({ profile: "0.47", write: (t) => out.push(t), plugged: [{ G: "2", D: 5 }] });
    node.start();
    await vi.advanceTimersByTimeAsync(2_000); // booted with nobody listening: its PLUGIN is lost
    expect(node.stats.framesLost).toBe(1);
    node.portOpened(); // DTR: reset
    node.input(cmd(1003, "VNO"));
    await vi.advanceTimersByTimeAsync(1_700);
    expect(out).toEqual([]);
    expect(node.stats.bytesIgnoredDeaf).toBeGreaterThan(0);
    await vi.advanceTimersByTimeAsync(100);
    expect(out).toEqual(['{"PLUGIN":[{"G":"2","V":0,"D":5,"DA":0}]}\r\n']);
    node.input(cmd(1003, "VNO"));
    await vi.advanceTimersByTimeAsync(5);
    expect(out.at(-1)).toBe('{"ACK":[{"G":"0","V":0,"D":1003,"DA":"V12_0.47"}]}\r\n');
    node.stop();
  });

  it("answers ERROR 1 per 128-byte chunk of a long line, and drops the second command of one write", async () => {
    const { node, out } = await booted("0.47");
    const long = cmd(1007, "F".repeat(600));
    expect(Buffer.byteLength(long)).toBe(646);
    node.input(long);
    await vi.advanceTimersByTimeAsync(5);
    expect(out).toEqual(Array(6).fill('{"ERROR":[{"CODE":1}]}\r\n'));
    out.length = 0;
    // 127 bytes with the newline are read; 128 are not.
    node.input(cmd(11, "0".repeat(83)));
    await vi.advanceTimersByTimeAsync(5);
    node.input(cmd(11, "0".repeat(84)));
    await vi.advanceTimersByTimeAsync(5);
    expect(out.map((l) => Object.keys(JSON.parse(l) as object)[0])).toEqual(["ACK", "ERROR"]);
    out.length = 0;
    node.input(cmd(1007, "FF0000") + cmd(1007, "00FF00"));
    await vi.advanceTimersByTimeAsync(5);
    expect(out).toEqual(['{"ACK":[{"G":"0","V":0,"D":1007,"DA":"FF0000"}]}\r\n']);
    node.stop();
  });

  it("overflows a DA of 64 characters or more, knows its own device ids only, and sends LED heartbeats every 30 s", async () => {
    const { node, out } = await booted("0.47");
    node.input(cmd(11, "1".repeat(70)));
    await vi.advanceTimersByTimeAsync(5);
    expect(node.commands.at(-1)).toMatchObject({ D: 11, overflow: true });
    expect(String(node.commands.at(-1)?.DA)).toHaveLength(64);
    out.length = 0;
    node.input(cmd(1000, "FF0000")); // the V11 board's LED: unknown on V12 hardware
    await vi.advanceTimersByTimeAsync(5);
    node.input(encodeCommand({ G: "0", V: 1, D: 1007, DA: "FF0000" }));
    await vi.advanceTimersByTimeAsync(5);
    node.input(cmd(1003, "XYZ"));
    await vi.advanceTimersByTimeAsync(5);
    node.input('{"DEVICE":[{"G":"0","V":0,"D":1007,"DA":1.5}]}\n');
    await vi.advanceTimersByTimeAsync(5);
    expect(out.map((l) => (JSON.parse(l) as { ERROR: { CODE: number }[] }).ERROR[0]?.CODE)).toEqual([3, 2, 4, 1]);
    out.length = 0;
    node.input(cmd(1007, "ff0000"));
    await vi.advanceTimersByTimeAsync(30_000);
    expect(out).toEqual([
      '{"ACK":[{"G":"0","V":0,"D":1007,"DA":"ff0000"}]}\r\n',
      '{"DEVICE":[{"G":"0","V":0,"D":1007,"DA":"FF0000"}]}\r\n',
      '{"DEVICE":[{"G":"0","V":0,"D":999,"DA":"00FF00"}]}\r\n',
    ]);
    node.stop();
  });
});

describe("SerialNode V12_1.00", () => {
  it("sends UNPLUG for each empty port at boot, ACKs every command in its own style, and never sends ERROR", async () => {
    const { node, out } = await booted("V12_1.00", { plugged: [{ G: "3", D: 1002 }] });
    expect(out).toEqual([
      '{"UNPLUG":[{"G":"1","V":0,"D":0,"DA":0}]}\r\n',
      '{"UNPLUG":[{"G":"2","V":0,"D":0,"DA":0}]}\r\n',
      '{"PLUGIN":[{"G":"3","V":0,"D":1002,"DA":0}]}\r\n',
    ]);
    out.length = 0;
    node.input(cmd(1003, "VNO"));
    node.input(cmd(1007, "ff00aa"));
    node.input(cmd(1002, "1", "3"));
    node.input(cmd(4242, "x"));
    node.input("garbage\n");
    node.input(cmd(1007, "F".repeat(600)));
    await vi.advanceTimersByTimeAsync(60_000);
    expect(out).toEqual([
      '{"ACK":[{"G":"0","V":0,"D":1003,"DA":"V12_1.00"}]}\r\n',
      '{"ACK":[{"G":"0","V":0,"D":1007,"DA":"FF00AA"}]}\r\n',
      '{"ACK":[{"G":"3","V":0,"D":1002,"DA":1}]}\r\n',
      '{"ACK":[{"G":"0","V":0,"D":4242,"DA":"x"}]}\r\n',
    ]);
    expect(node.stats.errorsSent).toBe(0);
    node.stop();
  });

  it("refuses an unknown profile at once", () => {
    expect(() => new SerialNode({ profile: "0.99" as "0.47", write: () => undefined })).toThrow(TypeError);
  });
});
