import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { InvalidArgumentError } from "commander";
import { afterAll, describe, expect, it } from "vitest";
import { foldFn, guid, interval, moment, nodeId, readJsonObject, ruleId, subdeviceId } from "../../cli/api/args.js";
import { CliError, type CliIO, table, when } from "../../cli/api/context.js";

describe("API command argument parsers", () => {
  it("accept what the service accepts and name what they refuse", () => {
    expect(guid("ABCDEF123456_0_0_1002")).toBe("ABCDEF123456_0_0_1002");
    expect(() => guid("ABCDEF123456_0_0")).toThrow(InvalidArgumentError);
    expect(nodeId("ABCDEF123456")).toBe("ABCDEF123456");
    expect(() => nodeId("ABC-DEF-1234")).toThrow('"ABC-DEF-1234" is not a node id');
    expect(ruleId("42")).toBe("42");
    expect(() => ruleId("4.2")).toThrow("is not a rule id");
    expect(subdeviceId("s0000001")).toBe("s0000001");
    expect(() => subdeviceId("a/b")).toThrow("is not a sub-device id");
    expect(interval("15min")).toBe("15min");
    expect(() => interval("0hour")).toThrow('"0hour" is not an interval');
    expect(foldFn("stddev")).toBe("stddev");
    expect(() => foldFn("avg")).toThrow('"avg" is not one of mean, sum, min, max, stddev, ss, count');
  });

  it("reads times as epoch ms or ISO 8601, and refuses anything else", () => {
    expect(moment("1700000000000")).toBe(1_700_000_000_000);
    expect(moment("2026-01-31")).toBe(Date.UTC(2026, 0, 31));
    expect(moment("2026-01-31T12:30:00Z")).toBe(Date.UTC(2026, 0, 31, 12, 30));
    expect(moment("2026-01-31T12:30:00+02:00")).toBe(Date.UTC(2026, 0, 31, 10, 30));
    for (const bad of ["2026-13-45", "now", "-5", "12:00"]) expect(() => moment(bad), bad).toThrow("is not a time");
  });
});

describe("readJsonObject", () => {
  const dir = mkdtempSync(join(tmpdir(), "blockkit-cli-args-"));
  const io = (stdin: string): CliIO => ({ stdout: () => {}, stderr: () => {}, env: {}, readStdin: () => Promise.resolve(stdin) });
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it("reads a file or standard input; refuses a missing file, bad JSON and non-objects as usage errors", async () => {
    const file = join(dir, "doc.json");
    writeFileSync(file, '{"a":1}');
    expect(await readJsonObject(io(""), file)).toEqual({ a: 1 });
    expect(await readJsonObject(io('{"b":2}'), "-")).toEqual({ b: 2 });
    const refusal = (p: Promise<unknown>) => p.then(() => null, (e: unknown) => e as CliError);
    const missing = await refusal(readJsonObject(io(""), join(dir, "none.json")));
    expect(missing).toBeInstanceOf(CliError);
    expect(missing?.exitCode).toBe(2);
    expect(missing?.message).toMatch(/^cannot read .*none\.json: ENOENT$/);
    expect((await refusal(readJsonObject(io("{"), "-")))?.message).toMatch(/^standard input is not valid JSON: /);
    expect((await refusal(readJsonObject(io("null"), "-")))?.message).toBe("standard input is not a JSON object");
  });
});

describe("output helpers", () => {
  it("aligns table columns on the widest cell and leaves no trailing spaces", () => {
    expect(table(["A", "LONGER", "C"], [["xxxx", "y", ""], ["z", "w", "last"]])).toEqual(["A     LONGER  C", "xxxx  y", "z     w       last"]);
  });

  it("shows times as ISO text and a dash when there is none", () => {
    expect(when(0)).toBe("1970-01-01T00:00:00.000Z");
    expect(when(undefined)).toBe("-");
  });
});
