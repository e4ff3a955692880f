import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { parse } from "yaml";
import { chart } from "../../cli/api/chart.js";
import { pointValue } from "../../cli/api/devices.js";
import type { CallbackJson, DataPoint, DeviceJson, RuleJson } from "../../protocol/api-types.js";
import { type Live, type TestBlock, lines, startCli } from "./helpers.js";

describe("output formats, history, charts, YAML rules", () => {
  let live: Live;
  let block: TestBlock;
  let dir: string;
  let button: string;
  let relay: string;
  let temp: string;
  const now = Date.now();

  beforeAll(async () => {
    live = await startCli();
    block = await live.block("CLIOUTPUT001");
    button = await block.send(5, "0");
    relay = await block.send(1002, "0");
    // Ten readings over the last 50 minutes, one two hours ago (outside -1h).
    await block.send(9, "5", { TIMESTAMP: now - 2 * 3_600_000 });
    for (let i = 0; i < 10; i++) temp = await block.send(9, String(10 + i), { TIMESTAMP: now - (50 - i * 5) * 60_000 });
    dir = mkdtempSync(join(tmpdir(), "blockkit-cli-output-"));
  });
  afterAll(async () => {
    await live.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("prints listings as a table within 80 columns, as JSON and as YAML; the listing is cached for completion", async () => {
    await live.run(["device", "set", relay, "--name", "A relay with a very long name indeed, longer than any column should be"]);
    const table = await live.run(["devices"]);
    expect(table.code, table.stderr).toBe(0);
    for (const l of lines(table.stdout)) expect(l.length, l).toBeLessThanOrEqual(80);
    expect(lines(table.stdout).find((l) => l.startsWith(relay))).toMatch(/A relay with .*…/);
    const json = JSON.parse((await live.run(["devices", "-o", "json"])).stdout) as Record<string, DeviceJson>;
    const yaml = parse((await live.run(["devices", "--output", "yaml"])).stdout) as Record<string, DeviceJson>;
    expect(yaml).toEqual(json);
    expect(Object.keys(json).sort()).toEqual([button, relay, temp].sort());
    const cache = readFileSync(join(live.dir, "home", ".cache", "blockkit", "guids"), "utf8");
    expect(cache).toBe(`${[button, relay, temp].sort().join("\n")}\n`);
    await live.run(["blocks"]);
    expect(readFileSync(join(live.dir, "home", ".cache", "blockkit", "nodeids"), "utf8")).toBe("CLIOUTPUT001\n");
  });

  it("reads history with relative times and draws a chart under the table", async () => {
    const hour = await live.run(["device", "data", temp, "--from", "-1h", "--to", "now", "-o", "json"]);
    expect(hour.code, hour.stderr).toBe(0);
    expect((JSON.parse(hour.stdout) as DataPoint[]).map((p) => Number(p.v))).toEqual([10, 11, 12, 13, 14, 15, 16, 17, 18, 19]);
    const day = JSON.parse((await live.run(["device", "data", temp, "--from=-24h", "-o", "json"])).stdout) as DataPoint[];
    expect(day).toHaveLength(11);

    const charted = await live.run(["device", "data", temp, "--from", "-1h", "--chart"]);
    expect(charted.code, charted.stderr).toBe(0);
    const out = lines(charted.stdout);
    expect(out[0]).toMatch(/^TIME\s+VALUE$/);
    expect(out.slice(1, 11).map((l) => l.split(/\s+/)[1])).toEqual(["10", "11", "12", "13", "14", "15", "16", "17", "18", "19"]);
    const drawn = out.slice(11);
    expect(drawn).toEqual(chart(JSON.parse(hour.stdout) as DataPoint[]));
    expect(drawn[0]).toMatch(/^19 │/);
    expect(drawn[7]).toMatch(/^10 │/);
    for (const l of drawn) expect(l.length).toBeLessThanOrEqual(80);
    // -o json stays data: no chart in it.
    expect(JSON.parse((await live.run(["device", "data", temp, "--from", "-1h", "--chart", "-o", "json"])).stdout)).toHaveLength(10);
  });

  it("draws rising values as rising columns, and says when there is nothing to draw", () => {
    const points = [1, 2, 3, 4].map((v, i) => ({ t: `t${i}`, v }));
    const rows = chart(points, 20, 4);
    expect(rows).toEqual(["4 │            ████", "  │        ▆▆▆▆████", "  │    ▃▃▃▃████████", "1 │▁▁▁▁████████████", "  └────────────────", "   t0            t3"]);
    expect(chart([{ t: "x", v: "on" }])).toEqual(["(fewer than two numeric points: nothing to chart)"]);
  });

  it("adds and updates rules from YAML files and standard input; `rules show` includes the runs", async () => {
    const file = join(dir, "porch.yaml");
    writeFileSync(
      file,
      [
        "# The button turns the porch light on.",
        "shortName: Porch light",
        "preconditions:",
        `  - handler: serviceChange`,
        `    params: { guid: ${button}, to: "1" }`,
        "actions:",
        "  - handler: serviceSendCommand",
        `    params: { guid: ${relay}, da: "1" }`,
        "timeout: 0",
        "",
      ].join("\n"),
    );
    const added = await live.run(["rules", "add", file]);
    expect(added.code, added.stderr).toBe(0);
    const rid = added.stdout.trim();
    const yamlStdin = `shortName: Renamed\npreconditions: [{handler: serviceChange, params: {guid: ${button}, to: "1"}}]\nactions: [{handler: serviceSendCommand, params: {guid: ${relay}, da: "1"}}]\n`;
    expect((await live.run(["rules", "update", rid, "-"], { stdin: yamlStdin })).code).toBe(0);
    const shown = JSON.parse((await live.run(["rules", "show", rid, "-o", "json"])).stdout) as RuleJson;
    expect(shown.shortName).toBe("Renamed");
    expect(shown.actions).toEqual([{ handler: "serviceSendCommand", params: { guid: relay, da: "1" } }]);
    expect((await live.run(["rules", "show", rid])).stdout).toContain("\n(no runs yet)\n");

    await block.send(5, "1");
    await vi.waitFor(
      async () => {
        const r = JSON.parse((await live.run(["rules", "show", rid, "-o", "json"])).stdout) as RuleJson;
        expect(r.history?.length).toBe(1);
      },
      { timeout: 5_000, interval: 50 },
    );
    const human = lines((await live.run(["rules", "show", rid])).stdout);
    expect(human).toContainEqual(expect.stringMatching(/^RAN\s+RESULT\s+STEPS$/));
    expect(human).toContainEqual(expect.stringMatching(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\s+ok\s+serviceSendCommand \d+ms$/));

    const bad = join(dir, "bad.yaml");
    writeFileSync(bad, "shortName: [unclosed\n");
    const refused = await live.run(["rules", "add", bad]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/bad\.yaml is not valid YAML: /);
    writeFileSync(bad, "- just\n- a list\n");
    expect((await live.run(["rules", "add", bad])).stderr).toMatch(/bad\.yaml is not a YAML object/);
  });

  it("callbacks set prints the signing secret", async () => {
    const set = await live.run(["callbacks", "set", temp, "http://127.0.0.1:9/hook"]);
    expect(set.code, set.stderr).toBe(0);
    const [first, second] = lines(set.stdout);
    expect(first).toBe(`callback of ${temp} set to http://127.0.0.1:9/hook`);
    expect(second).toMatch(/^secret {2}\S{16,}$/);
    const json = JSON.parse((await live.run(["callbacks", "set", temp, "http://127.0.0.1:9/other", "-o", "json"])).stdout) as CallbackJson;
    expect(json).toEqual({ url: "http://127.0.0.1:9/other", secret: second?.slice("secret  ".length) });
  });
});

describe("history values in the table", () => {
  it("shows a fold's float noise to six significant digits, never rounding the whole part, and the rest as sent", () => {
    expect(pointValue(21.228571428571428)).toBe("21.2286");
    expect(pointValue(16.666666666666668)).toBe("16.6667");
    expect(pointValue(0.000123456789)).toBe("0.000123457");
    expect(pointValue(-3.14159265)).toBe("-3.14159");
    expect(pointValue(123456789.123)).toBe("123456789.1");
    expect(pointValue(15)).toBe("15");
    expect(pointValue(1e21)).toBe("1e+21");
    expect(pointValue("FF0000")).toBe("FF0000");
    expect(pointValue("21.228571428571428")).toBe("21.228571428571428");
  });
});
