import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DataPoint, DeviceJson, HeartbeatRecord } from "../../protocol/api-types.js";
import { ADMIN_TOKEN } from "../helpers/live.js";
import { type Live, type TestBlock, lines, startCli } from "./helpers.js";

describe("blockkit devices / device", () => {
  let live: Live;
  let block: TestBlock;
  let relay: string;
  let temp: string;
  const hour = 3_600_000;
  const lastHour = Math.floor(Date.now() / hour) * hour - hour;

  beforeAll(async () => {
    live = await startCli();
    block = await live.block("CLIDEVICES01");
    relay = await block.send(1002, "0");
    await block.send(9, "10", { TIMESTAMP: lastHour + 1_000 });
    temp = await block.send(9, "20", { TIMESTAMP: lastHour + 2_000 });
  });
  afterAll(async () => {
    await live.close();
  });

  it("lists devices as a table and as the raw data with --json", async () => {
    const human = await live.run(["devices"]);
    expect(human.code, human.stderr).toBe(0);
    const [header, ...rows] = lines(human.stdout);
    expect(header).toMatch(/^GUID\s+TYPE\s+NAME\s+LAST\s+TIME$/);
    expect(rows).toHaveLength(2);
    expect(rows.find((r) => r.startsWith(relay))).toMatch(/relay\s+.+\s+0\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/);
    expect(rows.find((r) => r.startsWith(temp))).toMatch(/\s20\s+\d{4}-/);

    const json = await live.run(["devices", "--json"]);
    expect(json.code).toBe(0);
    const data = JSON.parse(json.stdout) as Record<string, DeviceJson>;
    expect(Object.keys(data).sort()).toEqual([temp, relay].sort());
    expect(data[relay]?.device_type).toBe("relay");
  });

  it("sends a command with --da, renames with --name, and shows the device", async () => {
    const set = await live.run(["device", "set", relay, "--da", "1"]);
    expect(set.code, set.stderr).toBe(0);
    expect(set.stdout).toBe(`sent 1 to ${relay}\n`);
    const cmds = await block.client.commands(block.token);
    expect(cmds).toEqual([{ G: "0", V: 0, D: 1002, DA: "1", GUID: relay }]);

    const rename = await live.run(["device", "set", relay, "--name", "Porch light", "--json"]);
    expect(rename).toEqual({ code: 0, stdout: "null\n", stderr: "" });
    const show = await live.run(["device", "show", relay]);
    expect(show.code).toBe(0);
    expect(show.stdout).toContain("name        Porch light\n");
    expect(show.stdout).toContain("type        relay (actuator)");
    expect(show.stdout).toContain("block       CLIDEVICES01");
  });

  it("reads the last heartbeat and the history, raw and folded", async () => {
    await block.client.heartbeat(block.token, [{ G: "0", V: 0, D: 9, DA: "21.5" }]);
    const hb = await live.run(["device", "heartbeat", temp, "--json"]);
    expect(hb.code, hb.stderr).toBe(0);
    expect(JSON.parse(hb.stdout) as HeartbeatRecord).toMatchObject({ GUID: temp, DA: expect.anything() as unknown });
    expect(String((JSON.parse(hb.stdout) as HeartbeatRecord).DA)).toBe("21.5");

    const raw = await live.run(["device", "data", temp, "--from", new Date(lastHour).toISOString(), "--to", String(lastHour + hour - 1), "--json"]);
    expect(raw.code, raw.stderr).toBe(0);
    expect((JSON.parse(raw.stdout) as DataPoint[]).map((p) => Number(p.v))).toEqual([10, 20]);

    const folded = await live.run(["device", "data", temp, "--from", String(lastHour), "--to", String(lastHour + hour - 1), "--interval", "1hour", "--fn", "mean"]);
    expect(folded.code, folded.stderr).toBe(0);
    const [header, ...rows] = lines(folded.stdout);
    expect(header).toMatch(/^TIME\s+VALUE$/);
    expect(rows).toEqual([`${new Date(lastHour).toISOString().slice(0, 23)}+0000  15`]);
  });

  it("refuses bad arguments with exit code 2 and a message naming them, before any request", async () => {
    const cases: [string[], RegExp][] = [
      [["device", "show", "not-a-guid"], /"not-a-guid" is not a device GUID/],
      [["device", "data", temp, "--interval", "3weeks"], /"3weeks" is not an interval/],
      [["device", "data", temp, "--fn", "median"], /"median" is not one of mean, sum/],
      [["device", "data", temp, "--from", "yesterday"], /"yesterday" is not a time/],
      [["device", "data", temp, "--from", "2000", "--to", "1000"], /--from is after --to/],
      [["device", "set", relay], /give --da VALUE and\/or --name NAME/],
      [["devices", "--server", "not a url"], /"not a url" is not a URL/],
    ];
    for (const [args, message] of cases) {
      const r = await live.run(args);
      expect(r.code, args.join(" ")).toBe(2);
      expect(r.stderr, args.join(" ")).toMatch(message);
      expect(r.stdout).toBe("");
    }
    const missing = await live.run(["devices"], { bare: true });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toBe(
      "blockkit devices: give --server URL, set BLOCKKIT_SERVER, or log in first: blockkit login --server URL --token T (see 'blockkit devices --help')\n",
    );
  });

  it("prints the service's errors as `blockkit: <status> <error>` with exit code 1, never the token", async () => {
    const unknown = await live.run(["device", "show", "CLIDEVICES01_0_0_77"]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/^blockkit: 404 \S.*\n$/);
    expect(unknown.stdout).toBe("");

    const badToken = "wrong-token-abcdef0123456789";
    const denied = await live.run(["devices", "--server", live.baseUrl, "--token", badToken], { bare: true });
    expect(denied.code).toBe(1);
    expect(denied.stderr).toMatch(/^blockkit: 401 /);
    expect(denied.stderr).not.toContain(badToken);
  });

  it("takes the server and token from BLOCKKIT_SERVER and BLOCKKIT_TOKEN", async () => {
    const r = await live.run(["devices", "--json"], { bare: true, env: { BLOCKKIT_SERVER: live.baseUrl, BLOCKKIT_TOKEN: ADMIN_TOKEN } });
    expect(r.code, r.stderr).toBe(0);
    expect(Object.keys(JSON.parse(r.stdout) as object)).toContain(relay);
  });

  it("removes a device", async () => {
    const rm = await live.run(["device", "rm", temp]);
    expect(rm).toEqual({ code: 0, stdout: `removed ${temp}\n`, stderr: "" });
    const after = await live.run(["devices", "--json"]);
    expect(Object.keys(JSON.parse(after.stdout) as object)).toEqual([relay]);
  });
});
