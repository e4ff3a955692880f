/**
 * The built firmware on a simulated ATmega328P (simavr), spoken to over its pseudo-terminal the way
 * the gateway does: PLUGIN frames at boot, the version query, commands to the relay and the LED,
 * the button, the TMP36, every ERROR code, and garbage, binary noise, an overlong line and a flood.
 */
import { randomBytes } from "node:crypto";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "../helpers/wait.js";
import { tempDir } from "../gateway/helpers.js";
import { HostPort, SimBoard, command, frame } from "./sim-board.js";

const PLUGINS = [5, 1002, 999, 9].map((D) => frame("PLUGIN", D));
const VERSION_QUERY = command({ D: 1003, DA: "VNO" });
const VERSION_ACK = frame("ACK", 1003, "BK_1.0.0");
const error = (code: number): string => JSON.stringify({ ERROR: [{ CODE: code }] });

let dir: string;
let board: SimBoard;
let host: HostPort;

beforeAll(async () => {
  dir = tempDir("firmware");
  board = await SimBoard.start({ pty: join(dir, "uart"), a0: 700, resetOnOpen: { bootMs: 0 } });
  host = new HostPort();
}, 120_000);

afterAll(async () => {
  await host?.close();
  await board?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** Writes `text` and waits until `count` lines came back; returns them. */
async function exchange(text: string | Buffer, count: number, ms = 10_000): Promise<string[]> {
  const m = host.mark();
  await host.write(text);
  return host.until(m, `${count} answer lines to ${String(text).slice(0, 60)}`, (l) => l.length >= count, ms);
}

describe("the firmware over its serial line", () => {
  it("announces every device with PLUGIN frames at boot (opening the port resets it), then its readings", async () => {
    await host.open(join(dir, "uart"));
    const lines = await host.until(0, "PLUGIN frames and first readings", (l) => l.length >= 8);
    expect(lines.slice(0, 8)).toEqual([
      ...PLUGINS,
      frame("DEVICE", 5, "0"),
      frame("DEVICE", 1002, "0"),
      frame("DEVICE", 999, "000000"),
      frame("DEVICE", 9, "20.1"), // 700 mV: the 10-bit ADC's step holding it reads 20.1 degC
    ]);
    expect(board.events).toContain("open");
    const s = await board.state();
    expect(s).toMatchObject({ d7: 0, d13: 0, d9: 0, d10: 0, d11: 0, wdt: "2048" });
    expect(s.boots).toBeGreaterThanOrEqual(1);
  });

  it("answers the version query with BK_<version>, then the PLUGIN frames again", async () => {
    expect(await exchange(VERSION_QUERY, 5)).toEqual([VERSION_ACK, ...PLUGINS]);
  });

  it("applies a relay command on D7 and ACKs it with the applied value", async () => {
    expect(await exchange(command({ D: 1002, DA: "1" }), 1)).toEqual([frame("ACK", 1002, "1")]);
    expect((await board.state()).d7).toBe(1);
  });

  it("applies an LED colour on the PWM pins, D13 lit while it is not black, and ACKs it", async () => {
    expect(await exchange(command({ D: 999, DA: "ff8000" }), 1)).toEqual([frame("ACK", 999, "FF8000")]);
    expect(await board.state()).toMatchObject({ d9: 255, d10: 128, d11: 0, d13: 1 });
    expect(await exchange(command({ D: 999, DA: "000000" }), 1)).toEqual([frame("ACK", 999, "000000")]);
    expect(await board.state()).toMatchObject({ d9: 0, d10: 0, d11: 0, d13: 0 });
  });

  it("handles every device of a DEVICE array and every command of one write, in order", async () => {
    const write =
      command({ D: 1002, DA: "0" }, { D: 999, DA: "0000FF" }, { D: 4242, DA: "1" }) + command({ D: 1002, DA: "1" }) + command({ D: 999, DA: "102030" });
    expect(await exchange(write, 5)).toEqual([
      frame("ACK", 1002, "0"),
      frame("ACK", 999, "0000FF"),
      error(3),
      frame("ACK", 1002, "1"),
      frame("ACK", 999, "102030"),
    ]);
    expect(await board.state()).toMatchObject({ d7: 1, d9: 16, d10: 32, d11: 48, d13: 1 });
  });

  it("sends a reading on each debounced press and release of the button", async () => {
    let m = host.mark();
    await board.driveButton([0, 3, 1, 4, 0, 2, 1, 5, 0]); // bounces for 14 ms, then held down
    await host.until(m, "the press", (l) => l.includes(frame("DEVICE", 5, "1")));
    await board.advance(200);
    expect(host.after(m)).toEqual([frame("DEVICE", 5, "1")]);
    m = host.mark();
    await board.driveButton([1, 2, 0, 6, 1]);
    await host.until(m, "the release", (l) => l.includes(frame("DEVICE", 5, "0")));
    await board.advance(200);
    expect(host.after(m)).toEqual([frame("DEVICE", 5, "0")]);
  });

  it("reports the TMP36 when it moves 0.5 degC or more: 750 mV on A0 is 25.0", async () => {
    let m = host.mark();
    await board.setA0(701); // the same ADC step: nothing to report
    await board.advance(1200);
    expect(host.after(m)).toEqual([]);
    m = host.mark();
    await board.setA0(750);
    await board.advance(600);
    await host.until(m, "the new temperature", (l) => l.length >= 1);
    expect(host.after(m)).toEqual([frame("DEVICE", 9, "25.0")]);
  });

  it("sends every reading again every 30 s", async () => {
    const m = host.mark();
    await board.advance(30_500);
    const lines = await host.until(m, "the periodic readings", (l) => l.length >= 4);
    expect(lines).toEqual([frame("DEVICE", 5, "0"), frame("DEVICE", 1002, "1"), frame("DEVICE", 999, "102030"), frame("DEVICE", 9, "25.0")]);
  });

  it("answers each ERROR code as the original firmware does", async () => {
    const cases: [string, number][] = [
      ['{"DEVICE":[{"G":"0","V":0,"D":1002,"DA":"1"}\r\n', 1], // broken JSON
      ['{"DEVICE":[{"G":"0","V":0,"D":1002}]}\r\n', 1], // DA missing
      ['{"PLUGIN":[]}\r\n', 1], // no DEVICE array
      [command({ D: 1002, DA: "2" }), 1], // not a relay state
      [command({ D: 999, DA: "red" }), 1], // not a colour
      [command({ D: 1002, DA: "1", V: 1 }), 2],
      [command({ D: 31337, DA: "1" }), 3],
      [command({ D: 9, DA: "1" }), 3], // the temperature takes no commands
      [command({ D: 1002, DA: "1", G: "7" }), 3], // no such port
      [command({ D: 1003, DA: "VERSION" }), 4],
      [command({ D: 1003, DA: "VNO", G: "1" }), 4],
    ];
    for (const [text, code] of cases) expect(await exchange(text, 1), text).toEqual([error(code)]);
    // A line over 127 bytes is answered once, when it becomes too long, and the rest of it ignored.
    const long = `{"DEVICE":[{"G":"0","V":0,"D":1002,"DA":"${"1".repeat(100)}"}]}`;
    expect(long.length).toBeGreaterThan(127);
    const m = host.mark();
    await host.write(`${long}\r\n${VERSION_QUERY}`);
    const lines = await host.until(m, "one ERROR then the version", (l) => l.length >= 6);
    expect(lines).toEqual([error(1), VERSION_ACK, ...PLUGINS]);
    // 127 bytes exactly is still a line.
    const head = '{"DEVICE":[{"G":"0","V":0,"D":1002,"DA":"1"}],"pad":"';
    const longest = `${head}${"x".repeat(127 - head.length - 2)}"}`;
    expect(longest.length).toBe(127);
    expect(await exchange(`${longest}\r\n`, 1)).toEqual([frame("ACK", 1002, "1")]);
  });

  it("survives garbage, binary noise, a 300-byte line and a flood, and answers after them", async () => {
    const bootsBefore = (await board.state()).boots;
    const noise = randomBytes(600);
    const flood = Buffer.from("{}\n{{{{[[[[\n\0\0\0\n".repeat(60) + `{"DEVICE":[${"{},".repeat(30)}{}]}\n`);
    await host.write(Buffer.concat([Buffer.from("garbage ]}{\r\n"), noise, Buffer.from(`\n${"y".repeat(300)}\n`), flood]));
    // At 9600 baud the flood takes seconds to arrive, and what overflows the firmware's 64-byte
    // receive buffer meanwhile is lost (a query sent into it would be mangled): wait until the last
    // byte reached the MCU and its answers stopped.
    let tx = -1;
    await waitFor(
      "the flood received and answered",
      async () => {
        const s = await board.state();
        const quiet = s.queued === 0 && s.tx === tx;
        tx = s.tx;
        return quiet;
      },
      20_000,
      300,
    );
    // Whatever the noise did, a version query on a fresh line is answered.
    const m = host.mark();
    await host.write(`\n${VERSION_QUERY}`);
    const answer = await host.until(m, "the version answer after the flood", (l) => l.includes(VERSION_ACK) && l.length >= l.indexOf(VERSION_ACK) + 5);
    expect(answer.slice(answer.indexOf(VERSION_ACK))).toEqual([VERSION_ACK, ...PLUGINS]);
    expect(await exchange(command({ D: 1002, DA: "0" }), 1)).toEqual([frame("ACK", 1002, "0")]);
    expect((await board.state()).d7).toBe(0);
    // No watchdog reset, no crash: the board never restarted.
    const after = await board.state();
    expect(after.boots).toBe(bootsBefore);
    expect(after.wdt).toBe("2048");
    expect(board.events.filter((e) => e.startsWith("halted"))).toEqual([]);
  });

  it("is restarted by its watchdog when it hangs, once, and comes back", async () => {
    const boots = board.boots();
    const m = host.mark();
    await board.hang();
    // Hung with interrupts off: only the watchdog (2 s) gets it out. After that reset the watchdog
    // stays armed at its shortest period; the firmware disarms it before the start-up, else it
    // would restart forever.
    await host.until(m, "the boot frames after the watchdog reset", (l) => l.length >= 8, 10_000);
    expect(host.after(m).slice(0, 4)).toEqual(PLUGINS);
    expect(board.boots()).toBe(boots + 1);
    await board.advance(3000);
    expect(board.boots()).toBe(boots + 1);
    expect((await board.state()).wdt).toBe("2048");
    expect(await exchange(VERSION_QUERY, 5)).toEqual([VERSION_ACK, ...PLUGINS]);
  });

  it("restarts cleanly when the port is opened again (the DTR reset)", async () => {
    const boots = board.boots();
    await host.close();
    await waitFor("the port closed", () => board.events.filter((e) => e === "close").length >= 1);
    const m = host.mark();
    await host.open(board.pty);
    const lines = await host.until(m, "PLUGIN frames after the reset", (l) => l.length >= 4);
    expect(lines.slice(0, 4)).toEqual(PLUGINS);
    expect(board.boots()).toBe(boots + 1);
    expect((await board.state()).d7).toBe(0); // outputs start off after a reset
  });
});
