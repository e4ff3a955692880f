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

  it("reads times relative to now (-30m, -24h, -7d, now), as epoch ms or ISO 8601, and refuses anything else", () => {
    const now = () => Date.UTC(2026, 0, 31, 12);
    expect(moment("now", now)).toBe(now());
    expect(moment("-30m", now)).toBe(now() - 30 * 60_000);
    expect(moment("-24h", now)).toBe(Date.UTC(2026, 0, 30, 12));
    expect(moment("-7d", now)).toBe(Date.UTC(2026, 0, 24, 12));
    expect(moment("-2w", now)).toBe(Date.UTC(2026, 0, 17, 12));
    expect(moment("-45s", now)).toBe(now() - 45_000);
    expect(moment("1700000000000")).toBe(1_700_000_000_000);
    expect(moment("2026-01-31")).toBe(Date.UTC(2026, 0, 31));
    expect(moment("2026-01-31T12:30:00Z")).toBe(Date.UTC(2026, 0, 31, 12, 30));
    expect(moment("2026-01-31T12:30:00+02:00")).toBe(Date.UTC(2026, 0, 31, 10, 30));
    for (const bad of ["2026-13-45", "NOW", "-5", "-5y", "+3h", "-h", "12:00"]) expect(() => moment(bad), bad).toThrow("is not a time");
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

  it("fits a table in 80 columns by clipping the widest column after the first", () => {
    const id = "ABCDEF123456_0_0_1002";
    const rows = [[id, "relay", "a name that goes on and on and on and on and on and on and on", "1", "2026-01-31 12:00:00"]];
    const out = table(["GUID", "TYPE", "NAME", "LAST", "TIME"], rows);
    for (const l of out) expect(l.length).toBeLessThanOrEqual(80);
    expect(out[1]).toMatch(new RegExp(`^${id}  relay  a name that goes on.*…  1     2026-01-31 12:00:00$`));
    expect(table(["A", "B"], [["x".repeat(90), "y"]])[1]).toBe(`${"x".repeat(90)}  y`);
  });

  it("shows times as ISO text and a dash when there is none", () => {
    expect(when(0)).toBe("1970-01-01T00:00:00.000Z");
    expect(when(undefined)).toBe("-");
  });
});
