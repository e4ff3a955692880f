import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ApiClient } from "../../protocol/api-client.js";
import type { CallbackJson, DataPoint, DeviceJson } from "../../protocol/api-types.js";
import { ADMIN_TOKEN } from "../helpers/live.js";
import { type Live, type TestBlock, lines, startCli } from "./helpers.js";

describe("blockkit subdevices, callbacks and camera", () => {
  let live: Live;
  let block: TestBlock;
  let rf: string;
  let dir: string;

  beforeAll(async () => {
    live = await startCli();
    block = await live.block("CLISUBDEV001");
    rf = await block.send(11, "0101");
    dir = mkdtempSync(join(tmpdir(), "blockkit-cli-cam-"));
  });
  afterAll(async () => {
    await live.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("adds an rf sensor, counts its code, renames it and removes it", async () => {
    const add = await live.run(["subdevices", "add", rf, "--category", "rf", "--type", "sensor", "--name", "Door", "--data", "1111"]);
    expect(add.code, add.stderr).toBe(0);
    const [id] = lines(add.stdout);
    expect(id).toMatch(/^\S+$/);
    const sub = id as string;

    await block.send(11, "1111");
    const counts = await live.run(["subdevices", "data", rf, sub, "--interval", "1hour", "--json"]);
    expect(counts.code, counts.stderr).toBe(0);
    expect((JSON.parse(counts.stdout) as DataPoint[]).map((p) => p.v)).toEqual([1]);

    const update = await live.run(["subdevices", "update", rf, sub, "--name", "Front door"]);
    expect(update).toEqual({ code: 0, stdout: `updated sub-device ${sub} of ${rf}\n`, stderr: "" });
    const dev = JSON.parse((await live.run(["device", "show", rf, "--json"])).stdout) as DeviceJson;
    expect(dev.subDevices[sub]).toEqual({ category: "rf", type: "sensor", shortName: "Front door", data: "1111" });
    expect((await live.run(["device", "show", rf])).stdout).toContain(`subdevice   ${sub}  rf sensor  Front door  data=1111`);

    expect((await live.run(["subdevices", "rm", rf, sub])).code).toBe(0);
    const after = JSON.parse((await live.run(["device", "show", rf, "--json"])).stdout) as DeviceJson;
    expect(after.subDevices).toEqual({});
  });

  it("prints a webhook sensor's tickle token on add and on an update that makes one; the token counts", async () => {
    const res = await request(`${live.authUrl}/auth/webhook?user_access_token=${ADMIN_TOKEN}`);
    const hooks = ((await res.body.json()) as { data: { guid: string } }).data.guid;
    const bell = await live.run(["subdevices", "add", hooks, "--category", "webhook", "--type", "sensor", "--name", "Bell", "--json"]);
    expect(bell.code, bell.stderr).toBe(0);
    expect((JSON.parse(bell.stdout) as { token: string }).token.length).toBeGreaterThan(30);

    const lamp = await live.run(["subdevices", "add", hooks, "--category", "webhook", "--type", "actuator", "--name", "Lamp", "--url", "http://127.0.0.1:9/lamp"]);
    expect(lines(lamp.stdout)).toHaveLength(1);
    const id = lamp.stdout.trim();
    const update = await live.run(["subdevices", "update", hooks, id, "--type", "sensor"]);
    expect(update.code, update.stderr).toBe(0);
    const [done, tokenLine] = lines(update.stdout);
    expect(done).toBe(`updated sub-device ${id} of ${hooks}`);
    const token = /^token (\S+)$/.exec(tokenLine ?? "")?.[1] as string;
    await new ApiClient({ baseUrl: live.baseUrl, token: ADMIN_TOKEN }).tickle(hooks, id, token);
    const counts = await live.run(["subdevices", "data", hooks, id, "--json"]);
    expect((JSON.parse(counts.stdout) as DataPoint[]).length).toBe(1);
  });

  it("refuses incomplete or malformed sub-device arguments with exit code 2", async () => {
    const cases: [string[], RegExp][] = [
      [["subdevices", "add", rf, "--category", "rf", "--type", "sensor"], /give --category, --type and --name/],
      [["subdevices", "add", rf, "--category", "infrared", "--type", "sensor", "--name", "x"], /"infrared" is not one of rf, webhook, sms/],
      [["subdevices", "add", rf, "--category", "webhook", "--type", "actuator", "--name", "x", "--url", "nope"], /"nope" is not a URL/],
      [["subdevices", "update", rf, "s1"], /give at least one of --category/],
      [["subdevices", "rm", rf, "bad id!"], /"bad id!" is not a sub-device id/],
    ];
    for (const [args, message] of cases) {
      const r = await live.run(args);
      expect(r.code, args.join(" ")).toBe(2);
      expect(r.stderr).toMatch(message);
    }
    const refused = await live.run(["subdevices", "add", "CLISUBDEV001_0_0_77", "--category", "rf", "--type", "sensor", "--name", "Ghost"]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/^blockkit: 404 \S/);
  });

  it("sets, shows and removes a device's callback", async () => {
    const set = await live.run(["callbacks", "set", rf, "http://127.0.0.1:9/hook"]);
    expect(set.code, set.stderr).toBe(0);
    const shown = JSON.parse((await live.run(["callbacks", "show", rf, "--json"])).stdout) as CallbackJson;
    expect(shown.url).toBe("http://127.0.0.1:9/hook");
    const human = await live.run(["callbacks", "show", rf]);
    expect(lines(human.stdout)[0]).toBe("url     http://127.0.0.1:9/hook");
    expect((await live.run(["callbacks", "rm", rf])).stdout).toBe(`callback of ${rf} removed\n`);
    const gone = await live.run(["callbacks", "show", rf]);
    expect(gone.code).toBe(1);
    expect(gone.stderr).toMatch(/^blockkit: 404 /);
    const ftp = await live.run(["callbacks", "set", rf, "ftp://example.com/x"]);
    expect(ftp.code).toBe(2);
    expect(ftp.stderr).toContain('"ftp://example.com/x" is not an http or https URL');
  });

  it("takes a camera snapshot: the block receives DA 1, uploads, and the JPEG lands in --out", async () => {
    const cam = await block.send(1004, "0");
    const jpeg = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.alloc(4096, 3), Buffer.from([0xff, 0xd9])]);
    const out = join(dir, "snap.jpg");
    const run = live.run(["camera", "snapshot", cam, "--out", out, "--stream", live.streamUrl]);
    const cmds = await block.client.commands(block.token);
    expect(cmds).toEqual([{ G: "0", V: 0, D: 1004, DA: "1", GUID: cam }]);
    await block.client.snapshot(block.token, cam, jpeg);
    const r = await run;
    expect(r, r.stderr).toEqual({ code: 0, stdout: `wrote ${jpeg.length} bytes to ${out}\n`, stderr: "" });
    expect(readFileSync(out).equals(jpeg)).toBe(true);

    const noOut = await live.run(["camera", "snapshot", cam]);
    expect(noOut.code).toBe(2);
    expect(noOut.stderr).toContain("required option '--out <file>' not specified");
  });
});
