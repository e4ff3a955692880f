import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { BlockJson, RuleJson } from "../../protocol/api-types.js";
import { BlockClient } from "../../protocol/block-client.js";
import { type Live, lines, startCli } from "./helpers.js";

describe("blockkit blocks", () => {
  let live: Live;
  beforeAll(async () => {
    live = await startCli();
    await live.block("CLIBLOCKS001");
  });
  afterAll(async () => {
    await live.close();
  });

  it("lists, shows and unpairs blocks", async () => {
    const list = await live.run(["blocks"]);
    expect(list.code, list.stderr).toBe(0);
    const [header, ...rows] = lines(list.stdout);
    expect(header).toMatch(/^NODEID\s+NAME\s+CREATED\s+LAST ACTIVE$/);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatch(/^CLIBLOCKS001\s/);

    const show = await live.run(["blocks", "show", "CLIBLOCKS001", "--json"]);
    expect(show.code, show.stderr).toBe(0);
    expect((JSON.parse(show.stdout) as BlockJson).date_created).toBeGreaterThan(0);

    const rm = await live.run(["blocks", "rm", "CLIBLOCKS001"]);
    expect(rm).toEqual({ code: 0, stdout: "unpaired CLIBLOCKS001\n", stderr: "" });
    expect(JSON.parse((await live.run(["blocks", "--json"])).stdout)).toEqual({});
    const gone = await live.run(["blocks", "show", "CLIBLOCKS001"]);
    expect(gone.code).toBe(1);
    expect(gone.stderr).toMatch(/^blockkit: 404 /);
  });

  it("claims a block that waits for activation: the block then gets its token", async () => {
    const client = new BlockClient({ baseUrl: live.baseUrl, nodeId: "CLICLAIM0001", holdTimeoutMs: 10_000 });
    try {
      const early = await live.run(["blocks", "claim", "CLICLAIM0001"]);
      expect(early.code).toBe(1);
      expect(early.stderr).toMatch(/^blockkit: 404 .*not awaiting activation/);
      const activation = client.activate();
      await vi.waitFor(() => expect(live.server.services.activation.isAwaiting("CLICLAIM0001")).toBe(true), { timeout: 5_000, interval: 10 });
      const claim = await live.run(["blocks", "claim", "CLICLAIM0001"]);
      expect(claim, claim.stderr).toEqual({ code: 0, stdout: "claimed CLICLAIM0001\n", stderr: "" });
      expect(await activation).toMatch(/\S{16,}/);
    } finally {
      await client.close();
    }
  });

  it("refuses a malformed node id with exit code 2", async () => {
    const r = await live.run(["blocks", "claim", "short"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('"short" is not a node id (12-64 letters and digits)');
  });
});

describe("blockkit rules", () => {
  let live: Live;
  let dir: string;
  const rule = (name: string) => ({
    shortName: name,
    preconditions: [{ handler: "serviceChange", params: { guid: "CLIRULES0001_0_0_5", to: "1" } }],
    actions: [{ handler: "serviceSendCommand", params: { guid: "CLIRULES0001_0_0_1002", da: "1" } }],
    timeout: 5,
  });

  beforeAll(async () => {
    live = await startCli();
    const block = await live.block("CLIRULES0001");
    await block.send(5, "0");
    await block.send(1002, "0");
    dir = mkdtempSync(join(tmpdir(), "blockkit-cli-rules-"));
  });
  afterAll(async () => {
    await live.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("adds a rule from a file and from standard input, lists, shows, suspends, resumes, updates and removes it", async () => {
    const file = join(dir, "rule.json");
    writeFileSync(file, JSON.stringify(rule("Button lights porch")));
    const added = await live.run(["rules", "add", file]);
    expect(added.code, added.stderr).toBe(0);
    const rid = added.stdout.trim();
    expect(rid).toMatch(/^\d+$/);
    const fromStdin = await live.run(["rules", "add", "-", "--json"], { stdin: JSON.stringify(rule("Second")) });
    expect(fromStdin.code, fromStdin.stderr).toBe(0);
    const rid2 = (JSON.parse(fromStdin.stdout) as { rid: string }).rid;
    expect(rid2).not.toBe(rid);

    const list = await live.run(["rules"]);
    const [header, ...rows] = lines(list.stdout);
    expect(header).toMatch(/^RID\s+NAME\s+STATE\s+WHEN\s+DO$/);
    expect(rows).toContainEqual(expect.stringMatching(new RegExp(`^${rid}\\s+Button lights porch\\s+active\\s+serviceChange\\s+serviceSendCommand$`)));

    expect((await live.run(["rules", "suspend", rid])).stdout).toBe(`suspended rule ${rid}\n`);
    expect((JSON.parse((await live.run(["rules", "show", rid, "--json"])).stdout) as RuleJson).suspended).toBe(true);
    expect((await live.run(["rules", "resume", rid])).code).toBe(0);
    const shown = await live.run(["rules", "show", rid]);
    expect(shown.stdout).toContain("suspended  no\n");
    expect(shown.stdout).toContain('when       serviceChange {"guid":"CLIRULES0001_0_0_5","to":"1"}');

    writeFileSync(file, JSON.stringify(rule("Renamed")));
    expect((await live.run(["rules", "update", rid, file])).code).toBe(0);
    expect((JSON.parse((await live.run(["rules", "show", rid, "--json"])).stdout) as RuleJson).shortName).toBe("Renamed");

    expect((await live.run(["rules", "rm", rid])).stdout).toBe(`removed rule ${rid}\n`);
    const left = JSON.parse((await live.run(["rules", "--json"])).stdout) as RuleJson[];
    expect(left.map((r) => String(r.rid))).toEqual([rid2]);
  });

  it("names an unreadable file, invalid JSON and a missing field (exit 2); the service's refusal is exit 1", async () => {
    const bad = join(dir, "bad.json");
    writeFileSync(bad, "{ shortName: oops");
    const missingField = join(dir, "nofield.json");
    writeFileSync(missingField, JSON.stringify({ shortName: "x", preconditions: [] }));
    const cases: [string[], string | undefined, RegExp][] = [
      [["rules", "add", join(dir, "absent.json")], undefined, /cannot read .*absent\.json: ENOENT/],
      [["rules", "add", bad], undefined, /bad\.json is not valid JSON/],
      [["rules", "add", "-"], "[1,2]", /standard input is not a JSON object/],
      [["rules", "add", missingField], undefined, /nofield\.json: "actions" must be an array/],
      [["rules", "show", "abc"], undefined, /"abc" is not a rule id/],
    ];
    for (const [args, stdin, message] of cases) {
      const r = await live.run(args, { stdin });
      expect(r.code, args.join(" ")).toBe(2);
      expect(r.stderr).toMatch(message);
    }
    const unknownHandler = join(dir, "handler.json");
    writeFileSync(unknownHandler, JSON.stringify({ ...rule("x"), actions: [{ handler: "launchRocket", params: {} }] }));
    const refused = await live.run(["rules", "add", unknownHandler]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/^blockkit: 400 .*launchRocket/);
  });
});
