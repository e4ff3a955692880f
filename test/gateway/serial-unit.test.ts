/** Serial frame codec, the one-in-flight command queue (fake timers) and the link on the mock binding. */
import type { SerialPortStream } from "@serialport/stream";
import { SerialPortMock } from "serialport";

import { afterEach, describe, expect, it, vi } from "vitest";
import type { Reading } from "../../gateway/agent/types.js";
import { CommandQueue } from "../../gateway/links/command-queue.js";
import { SerialCommandRefused, SerialLink, type SerialLinkOptions } from "../../gateway/links/serial.js";
import type { SerialBinding } from "../../gateway/links/serial-port.js";
import { LineSplitter, decodeFrame, encodeCommand, encodeNodeFrame, serialErrorMeaning } from "../../protocol/serial-frames.js";
import { waitFor } from "../helpers/wait.js";

// The binding SerialPortMock uses (the ESM and CJS builds of binding-mock are separate instances).
const MockBinding = SerialPortMock.binding;
/** The mock port behind an open SerialPortMock (the parts used here). */
interface MockPortBinding {
  emitData(data: Buffer): void;
  recording: Buffer;
  openOptions: { path: string };
}

describe("serial frames", () => {
  it("decodes every frame kind, with G as a number and DA kept as text", () => {
    expect(decodeFrame('{"DEVICE":[{"G":"0","V":0,"D":9,"DA":21.5}]}\r')).toEqual({
      ok: true,
      frame: { kind: "DEVICE", devices: [{ G: "0", V: 0, D: 9, DA: "21.5" }] },
    });
    expect(decodeFrame('{"DEVICE":[{"G":1,"V":0,"D":11,"DA":"010101110001"}]}')).toMatchObject({
      frame: { devices: [{ G: "1", DA: "010101110001" }] },
    });
    expect(decodeFrame('{"PLUGIN":[{"G":"2","V":0,"D":1}]}')).toMatchObject({ frame: { kind: "PLUGIN", devices: [{ G: "2", D: 1 }] } });
    expect(decodeFrame('{"UNPLUG":[{"G":"2","V":0,"D":1}]}')).toMatchObject({ frame: { kind: "UNPLUG" } });
    expect(decodeFrame('{"ACK":[{"G":"0","V":0,"D":1000,"DA":"FF0000"}]}')).toMatchObject({ frame: { kind: "ACK" } });
    expect(decodeFrame('{"ERROR":[{"CODE":3}]}')).toEqual({ ok: true, frame: { kind: "ERROR", codes: [3] } });
    expect(serialErrorMeaning(3)).toMatch(/device id/);
    expect(serialErrorMeaning(42)).toMatch(/unknown error code 42/);
  });

  it("refuses garbage with a reason and never throws", () => {
    for (const bad of ["", "hello", "{", "[1,2]", '{"FOO":[]}', '{"DEVICE":{}}', '{"DEVICE":[{"G":"a b","V":0,"D":1,"DA":"1"}]}', '{"DEVICE":[{"G":"1","V":0,"D":1}]}', '{"ERROR":[{"CODE":"x"}]}']) {
      const r = decodeFrame(bad);
      expect(r.ok, bad).toBe(false);
      if (!r.ok) expect(r.reason.length).toBeGreaterThan(3);
    }
  });

  it("encodes commands and node frames that decode back", () => {
    const line = encodeCommand({ G: "0", V: 0, D: 1000, DA: "00FF00" });
    expect(line).toBe('{"DEVICE":[{"G":"0","V":0,"D":1000,"DA":"00FF00"}]}\n');
    const node = encodeNodeFrame({ kind: "ACK", devices: [{ G: "0", V: 0, D: 1000, DA: "00FF00" }] });
    expect(node.endsWith("\r\n")).toBe(true);
    expect(decodeFrame(node)).toMatchObject({ ok: true, frame: { kind: "ACK" } });
  });

  it("splits lines across chunks and cuts endless noise", () => {
    const s = new LineSplitter();
    const lines: string[] = [];
    const garbage: string[] = [];
    s.push('{"DEV', (l) => lines.push(l), (g) => garbage.push(g));
    s.push('ICE":[]}\r\nab\ncd', (l) => lines.push(l), (g) => garbage.push(g));
    expect(lines).toEqual(['{"DEVICE":[]}', "ab"]);
    s.push("x".repeat(9000), (l) => lines.push(l), (g) => garbage.push(g));
    s.push("yy\nok\n", (l) => lines.push(l), (g) => garbage.push(g));
    expect(garbage).toHaveLength(1);
    expect(lines.at(-1)).toBe("ok");
  });
});

describe("CommandQueue", () => {
  afterEach(() => vi.useRealTimers());

  it("keeps one command in flight until its ACK or the 2 s timeout", async () => {
    vi.useFakeTimers();
    const written: string[] = [];
    const q = new CommandQueue(async (c) => void written.push(c.DA));
    q.setReady(true);
    const results: string[] = [];
    const a = q.send({ G: "1", V: 0, D: 1002, DA: "a" }).then(() => results.push("a ok"), (e: Error) => results.push(`a ${e.message}`));
    const b = q.send({ G: "1", V: 0, D: 1002, DA: "b" }).then(() => results.push("b ok"), (e: Error) => results.push(`b ${e.message}`));
    await vi.advanceTimersByTimeAsync(0);
    expect(written).toEqual(["a"]);
    await vi.advanceTimersByTimeAsync(1999);
    expect(written).toEqual(["a"]);
    await vi.advanceTimersByTimeAsync(1);
    expect(written).toEqual(["a", "b"]);
    expect(q.ack({ G: "9", V: 0, D: 1002 })).toBe(false);
    expect(q.ack({ G: "1", V: 0, D: 1002 })).toBe(true);
    await Promise.all([a, b]);
    expect(results).toEqual(["a no ACK within 2000 ms", "b ok"]);
    expect(q.stats).toMatchObject({ sent: 2, acked: 1, timeouts: 1 });
  });

  it("blames an ERROR only on a command completely written before it", async () => {
    vi.useFakeTimers();
    let written: () => void = () => undefined;
    const q = new CommandQueue(() => new Promise<void>((r) => (written = r)));
    q.setReady(true);
    const a = q.send({ G: "1", V: 0, D: 1002, DA: "a" });
    await vi.advanceTimersByTimeAsync(0);
    expect(q.fail("firmware ERROR 1")).toBe(false); // still being written: a stray
    written();
    await vi.advanceTimersByTimeAsync(0);
    expect(q.fail("firmware ERROR 3")).toBe(true);
    await expect(a).rejects.toThrow(/ERROR 3/);
  });

  it("after quiet(ms), writes the next command only once the line was quiet that long", async () => {
    vi.useFakeTimers();
    const written: string[] = [];
    const q = new CommandQueue(async (c) => void written.push(c.DA));
    q.setReady(true);
    q.quiet(500);
    const p = q.send({ G: "1", V: 0, D: 1002, DA: "x" });
    await vi.advanceTimersByTimeAsync(300);
    q.quiet(500); // another ERROR 1 arrived: the wait starts again
    await vi.advanceTimersByTimeAsync(499);
    expect(written).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(written).toEqual(["x"]);
    q.ack({ G: "1", V: 0, D: 1002 });
    await p;
  });

  it("holds commands while the port is down", async () => {
    vi.useFakeTimers();
    const written: string[] = [];
    const q = new CommandQueue(async (c) => void written.push(c.DA));
    const p = q.send({ G: "1", V: 0, D: 1002, DA: "x" });
    await vi.advanceTimersByTimeAsync(5000);
    expect(written).toEqual([]);
    q.setReady(true);
    await vi.advanceTimersByTimeAsync(0);
    expect(written).toEqual(["x"]);
    q.ack({ G: "1", V: 0, D: 1002 });
    await p;
    q.clear("done");
  });
});

describe("SerialLink on the mock binding", () => {
  const links: SerialLink[] = [];
  afterEach(async () => {
    for (const l of links.splice(0)) await l.stop();
    MockBinding.reset();
  });

  function setup(
    target: { path?: string; match?: { vendorId?: string; productId?: string } },
    extra: Partial<SerialLinkOptions> = {},
  ): {
    link: SerialLink;
    got: Reading[];
    port: () => MockPortBinding;
  } {
    let last: SerialPortStream | null = null;
    const binding: SerialBinding = {
      list: () => SerialPortMock.list(),
      identify: async (path) => ((await SerialPortMock.list()).some((p) => p.path === path) ? path : null),
      create: (path, baudRate) => {
        last = new SerialPortMock({ path, baudRate, autoOpen: false }) as unknown as SerialPortStream;
        return last;
      },
    };
    const got: Reading[] = [];
    const link = new SerialLink({ ...target, binding, sink: { submitMany: (r) => got.push(...r) }, reopen: { baseMs: 20, maxMs: 50 }, settleMs: 0, watchMs: 20, ...extra });
    links.push(link);
    return { link, got, port: () => (last as unknown as { port: MockPortBinding }).port };
  }

  it("asks the firmware version, turns frames into readings and config events, and counts garbage and errors", async () => {
    MockBinding.createPort("/dev/ttyMOCK0", { echo: false, record: true });
    const { link, got, port } = setup({ path: "/dev/ttyMOCK0" });
    await link.start();
    await waitFor("port open", () => link.state === "up");
    await waitFor("version query written", () => port().recording.toString().includes('"DA":"VNO"'));
    const emit = (s: string): void => port().emitData(Buffer.from(s));
    emit('{"DEVICE":[{"G":"0","V":0,"D":1003,"DA":"V12_1.00"}]}\r\n');
    emit('{"DEVICE":[{"G":"1","V":0,"D":9,"DA":"21.5"},{"G":"0101","V":0,"D":11,"DA":"0x5A"}]}\r\nnoise here\r\n');
    emit('{"PLUGIN":[{"G":"2","V":0,"D":5}]}\n{"ERROR":[{"CODE":2}]}\n');
    await waitFor("readings", () => got.length === 4);
    expect(got).toEqual([
      { G: "0", V: 0, D: 1003, DA: "VERSION", kind: "config", value: "V12_1.00" },
      { G: "1", V: 0, D: 9, DA: "21.5", kind: "data" },
      { G: "0101", V: 0, D: 11, DA: "0x5A", kind: "data" },
      { G: "2", V: 0, D: 5, DA: "PLUGIN", kind: "config" },
    ]);
    expect(link.firmwareVersion).toBe("V12_1.00");
    await waitFor("error counted", () => link.counters().firmwareErrors === 1);
    expect(link.counters().garbage).toBe(1);
    // A command is written and resolves on its ACK.
    const done = link.deliver({ G: "1", V: 0, D: 1002, DA: "1", GUID: "" });
    await waitFor("command written", () => port().recording.toString().includes('"D":1002'));
    emit('{"ACK":[{"G":"1","V":0,"D":1002,"DA":"1"}]}\r\n');
    await done;
    expect(link.owns({ G: "1", V: 0, D: 9, DA: "", GUID: "" })).toBe(true);
  });

  it("asks the firmware version again when a query goes unacknowledged (a board resetting as its port opens)", async () => {
    MockBinding.createPort("/dev/ttyMOCK0", { echo: false, record: true });
    const { link, got, port } = setup({ path: "/dev/ttyMOCK0" });
    await link.start();
    const queries = (): number => port().recording.toString().split('"DA":"VNO"').length - 1;
    await waitFor("first version query", () => queries() === 1);
    // No ACK, no answer: after the 2 s ACK timeout the query goes out again.
    await waitFor("second version query", () => queries() === 2, 5000);
    port().emitData(Buffer.from('{"ACK":[{"G":"0","V":0,"D":1003,"DA":"VNO"}]}\r\n{"DEVICE":[{"G":"0","V":0,"D":1003,"DA":"V12_1.00"}]}\r\n'));
    await waitFor("version reported", () => link.firmwareVersion === "V12_1.00");
    expect(got.some((r) => r.kind === "config" && r.value === "V12_1.00")).toBe(true);
  });

  it("finds the port by USB ids, and keeps trying until it appears", async () => {
    const { link, got, port } = setup({ match: { vendorId: "2341", productId: "0043" } });
    await link.start();
    await waitFor("a failed open", () => link.state === "down");
    MockBinding.createPort("/dev/ttyACM7", { echo: false, record: true, vendorId: "2341", productId: "0043" });
    await waitFor("port open", () => link.state === "up", 5000);
    expect(port().openOptions.path).toBe("/dev/ttyACM7");
    port().emitData(Buffer.from('{"DEVICE":[{"G":"1","V":0,"D":9,"DA":"20"}]}\n'));
    await waitFor("reading", () => got.length === 1);
  });

  it("waits for the board to come out of its reset before the first write, asks the version first, and reads it from an ACK", async () => {
    MockBinding.createPort("/dev/ttyMOCK0", { echo: false, record: true });
    const { link, got, port } = setup({ path: "/dev/ttyMOCK0" }, { settleMs: 300 });
    const queued = link.deliver({ G: "1", V: 0, D: 1002, DA: "1", GUID: "" });
    await link.start();
    await waitFor("port open", () => link.state === "up");
    const opened = Date.now();
    expect(port().recording.length).toBe(0);
    await waitFor("first write", () => port().recording.length > 0);
    expect(Date.now() - opened).toBeGreaterThanOrEqual(250);
    expect(port().recording.toString()).toBe('{"DEVICE":[{"G":"0","V":0,"D":1003,"DA":"VNO"}]}\n');
    port().emitData(Buffer.from('{"ACK":[{"G":"0","V":0,"D":1003,"DA":"V12_0.47"}]}\r\n'));
    await waitFor("relay written after the version query", () => port().recording.toString().includes('"D":1002'));
    expect(link.firmwareVersion).toBe("V12_0.47");
    expect(got).toEqual([{ G: "0", V: 0, D: 1003, DA: "VERSION", kind: "config", value: "V12_0.47" }]);
    port().emitData(Buffer.from('{"ACK":[{"G":"1","V":0,"D":1002,"DA":1}]}\r\n'));
    await queued;
  });

  it("refuses a command the firmware could not read before writing it, and holds the line quiet after an ERROR 1", async () => {
    MockBinding.createPort("/dev/ttyMOCK0", { echo: false, record: true });
    const { link, port } = setup({ path: "/dev/ttyMOCK0" }, { quietMs: 400 });
    await link.start();
    await waitFor("version query written", () => port().recording.toString().includes("VNO"));
    port().emitData(Buffer.from('{"ACK":[{"G":"0","V":0,"D":1003,"DA":"V12_0.47"}]}\r\n'));
    await waitFor("version", () => link.firmwareVersion === "V12_0.47");
    const before = port().recording.length;
    await expect(link.deliver({ G: "0", V: 0, D: 1007, DA: "F".repeat(64), GUID: "" })).rejects.toThrow(SerialCommandRefused);
    expect(port().recording.length).toBe(before);
    expect(link.counters().commandsRefused).toBe(1);
    // 63 characters fit: written; the firmware answers it with ERROR 1, which ends it.
    const rf = link.deliver({ G: "0", V: 0, D: 11, DA: "1".repeat(63), GUID: "" });
    await waitFor("RF command written", () => port().recording.length > before);
    const next = link.deliver({ G: "0", V: 0, D: 1007, DA: "00FF00", GUID: "" });
    const at = port().recording.length;
    port().emitData(Buffer.from('{"ERROR":[{"CODE":1}]}\r\n'));
    await expect(rf).rejects.toThrow(/ERROR 1/);
    const t0 = Date.now();
    await waitFor("next command written", () => port().recording.length > at);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(300);
    port().emitData(Buffer.from('{"ACK":[{"G":"0","V":0,"D":1007,"DA":"00FF00"}]}\r\n'));
    await next;
  });

  it("refuses a link without a port at once", () => {
    expect(() => new SerialLink({ sink: { submitMany: () => 0 } })).toThrow(TypeError);
    expect(() => new SerialLink({ path: "/dev/x", baudRate: -1, sink: { submitMany: () => 0 } })).toThrow(/baudRate/);
  });
});
