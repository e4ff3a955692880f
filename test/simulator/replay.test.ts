import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ApiClient } from "../../protocol/api-client.js";
import { FileRecorder } from "../../gateway/daemon/record.js";
import { BlockkitServer } from "../../server/controller.js";
import { mqttReading, parseRecording, serialReadings } from "../../simulator/replay.js";
import { playRecording } from "../../simulator/replay-player.js";

const T0 = 1_763_000_000_000;
const RECORDING = [
  JSON.stringify({ t: T0, link: "serial", frame: '{"DEVICE":[{"G":"0","V":0,"D":9,"DA":21.5}]}' }),
  JSON.stringify({ t: T0 + 40, link: "serial", frame: { DEVICE: [{ G: "1", V: 0, D: 5, DA: "1" }, { G: "2", V: 0, D: 11, DA: "010101010101" }] } }),
  JSON.stringify({ t: T0 + 60, link: "serial", frame: '{"ACK":[{"G":"0","V":0,"D":1000,"DA":"FF0000"}]}' }),
  JSON.stringify({ t: T0 + 80, link: "serial", frame: { PLUGIN: [{ G: "3", V: 0, D: 1002 }] } }),
  JSON.stringify({ t: T0 + 100, link: "mqtt", topic: "blockkit/4_0_8/data", frame: '{"DA":55}' }),
  JSON.stringify({ t: T0 + 120, link: "mqtt", frame: { topic: "home/5_0_6/heartbeat", payload: "73" } }),
  "not json",
  JSON.stringify({ link: "serial", frame: "{}" }),
  JSON.stringify({ t: T0 + 130, link: "mqtt", topic: "blockkit/gateway/status", frame: "online" }),
  "",
].join("\n");

describe("recording format", () => {
  it("turns serial and MQTT frames into readings and lists unusable lines", () => {
    const rec = parseRecording(RECORDING);
    expect(rec.entries.map((e) => e.at)).toEqual([0, 40, 80, 100, 120]);
    expect(rec.entries.flatMap((e) => e.readings.map((r) => `${e.link}:${r.kind}:${r.G}_${r.V}_${r.D}=${r.DA}`))).toEqual([
      "serial:data:0_0_9=21.5",
      "serial:data:1_0_5=1",
      "serial:data:2_0_11=010101010101",
      "serial:config:3_0_1002=PLUGIN",
      "mqtt:data:4_0_8=55",
      "mqtt:heartbeat:5_0_6=73",
    ]);
    expect(rec.readings).toBe(6);
    expect(rec.problems).toEqual(["line 7: not JSON", "line 8: t must be epoch ms", 'line 9: the MQTT message "online" is unusable (not a node topic with a value)']);
    expect(mqttReading("p/1_0_9/config", '{"type":"UNPLUG"}')).toEqual({ G: "1", V: 0, D: 9, DA: "UNPLUG", kind: "config" });
  });

  it("reports the firmware version where the gateway does: a VERSION config event on D 1003, from an ACK or a DEVICE frame", () => {
    const version = { G: "0", V: 0, D: 1003, DA: "VERSION", kind: "config" };
    expect(serialReadings('{"ACK":[{"G":"0","V":0,"D":1003,"DA":"V12_0.47"}]}')).toEqual([{ ...version, value: "V12_0.47" }]);
    expect(serialReadings('{"DEVICE":[{"G":"0","V":0,"D":1003,"DA":"V12_1.00"}]}')).toEqual([{ ...version, value: "V12_1.00" }]);
    expect(serialReadings('{"ACK":[{"G":"0","V":0,"D":1003,"DA":"VNO"}]}')).toEqual([]);
  });

  it("reads what the gateway's own recorder writes", async () => {
    const dir = mkdtempSync(join(tmpdir(), "blockkit-rec-"));
    try {
      const file = join(dir, "frames.jsonl");
      let now = T0;
      const rec = new FileRecorder(file, pino({ level: "silent" }), () => (now += 25));
      rec.start();
      rec.record("serial", '{"DEVICE":[{"G":"0","V":0,"D":9,"DA":"22.5"}]}');
      rec.record("serial", '{"ERROR":[{"CODE":3}]}');
      rec.record("mqtt", "1", "blockkit/7_0_5/data");
      rec.record("mqtt", "PLUGIN", "blockkit/7_0_5/config");
      await rec.stop();
      const parsed = parseRecording(readFileSync(file, "utf8"));
      expect(parsed.problems).toEqual([]);
      expect(parsed.entries.map((e) => [e.at, e.link, e.readings])).toEqual([
        [0, "serial", [{ G: "0", V: 0, D: 9, DA: "22.5", kind: "data" }]],
        [50, "mqtt", [{ G: "7", V: 0, D: 5, DA: "1", kind: "data" }]],
        [75, "mqtt", [{ G: "7", V: 0, D: 5, DA: "PLUGIN", kind: "config" }]],
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("replay through a real BlockAgent", () => {
  let server: BlockkitServer;
  let dir: string;
  let baseUrl: string;
  const TOKEN = "admin-token-0123456789";

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "blockkit-replay-"));
    server = new BlockkitServer({ port: 0, streamPort: 0, dataDir: dir, adminToken: TOKEN, logger: pino({ level: "silent" }), pollHoldSeconds: 1 });
    baseUrl = (await server.start()).baseUrl;
  });

  afterAll(async () => {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("stores every recorded reading on the server, at the recorded pace", { timeout: 20_000 }, async () => {
    const rec = parseRecording(RECORDING);
    const started = Date.now();
    const result = await playRecording({ baseUrl, token: TOKEN, nodeId: "REPLAYTEST0001", entries: rec.entries, speed: 1 });
    expect(Date.now() - started).toBeGreaterThanOrEqual(120);
    expect(result).toMatchObject({ nodeId: "REPLAYTEST0001", frames: 5, sent: 6, acked: 6, errors: 0 });
    const api = new ApiClient({ baseUrl, token: TOKEN });
    const devices = await api.devices();
    expect(Object.keys(devices).sort()).toEqual(
      ["0_0_9", "1_0_5", "2_0_11", "3_0_1002", "4_0_8", "5_0_6"].map((k) => `REPLAYTEST0001_${k}`).sort(),
    );
    expect((await api.heartbeat("REPLAYTEST0001_4_0_8")).DA).toBe(55);
    expect((await api.device("REPLAYTEST0001_3_0_1002")).meta).toMatchObject({ plugged: true });
    expect((await api.heartbeat("REPLAYTEST0001_2_0_11")).DA).toBe("010101010101");
    expect((await api.history("REPLAYTEST0001_0_0_9", { from: 0 })).map((p) => p.v)).toEqual([21.5]);
  });
});
