import { describe, expect, it } from "vitest";
import { scenarioFromFlags } from "../../simulator/scenario/defaults.js";
import { ScenarioError, nodeIdFor, parseScenarioText, validateScenario } from "../../simulator/scenario/parse.js";
import { checkThresholds, parseThreshold } from "../../simulator/scenario/thresholds.js";

const YAML = `
name: desk
seed: 7
blocks: { count: 3, node_id: "DESK{seed}X{index:8}", two_legged: 1 }
devices:
  - type: temperature
    rate: 2
    generator: { kind: sine, min: 10, max: 20, period_s: 60, noise: 0.5 }
  - type: relay
  - type: rf433
    G: "5"
    generator: { kind: rf, codes: ["0101010101010101", "A1B2"], mean_interval_s: 3 }
ramp_up: { blocks_per_s: 10 }
duration_s: 12
chaos:
  - { at_s: 5, action: drop, blocks: 1, for_s: 2 }
thresholds: ["p99_command_ms < 50", "errors == 0"]
`;

function problems(fn: () => unknown): string[] {
  try {
    fn();
  } catch (err) {
    if (err instanceof ScenarioError) return err.problems;
    throw err;
  }
  throw new Error("expected a ScenarioError");
}

describe("scenario files", () => {
  it("parses YAML, applies defaults and resolves device types", () => {
    const s = parseScenarioText(YAML);
    expect(s.blocks).toEqual({ count: 3, node_id: "DESK{seed}X{index:8}", two_legged: 1 });
    expect(s.devices.map((d) => [d.type, d.V, d.D, d.G, d.generator.kind])).toEqual([
      ["temperature", 0, 9, "1", "sine"],
      ["relay", 0, 1002, "2", "actuator"],
      ["rf433", 0, 11, "5", "rf"],
    ]);
    expect(s.devices[0]?.generator).toMatchObject({ decimals: 1, noise: 0.5 });
    expect(s.warmup_s).toBe(0);
    expect(s.commands.rate).toBe(1);
    expect(s.chaos[0]).toEqual({ at_s: 5, action: "drop", blocks: 1, for_s: 2, events: 100 });
    expect(s.thresholds.map((t) => [t.metric, t.op, t.value])).toEqual([
      ["p99_command_ms", "<", 50],
      ["errors", "==", 0],
    ]);
    expect(nodeIdFor(s.blocks.node_id, s.seed, 2)).toBe("DESK7X00000002");
    expect(Object.isFrozen(s)).toBe(true);
  });

  it("accepts JSON as well", () => {
    const s = parseScenarioText(JSON.stringify({ devices: [{ type: "button" }], duration_s: 5 }));
    expect(s.devices[0]?.generator).toEqual({ kind: "button", mean_interval_s: 30 });
    expect(s.blocks.count).toBe(1);
  });

  it("lists every problem by path", () => {
    const p = problems(() =>
      parseScenarioText(`
blocks: { count: 0 }
devices:
  - type: toaster
  - type: temperature
    generator: { kind: sine, period_s: -1, min: 5, max: 1 }
  - type: temperature
    generator: { kind: fractal }
duration_s: 10
`),
    );
    // One pass: the schema's problems and the devices' are listed together.
    expect(p).toEqual([
      "blocks.count: Expected integer to be greater or equal to 1",
      expect.stringMatching(/^devices\.0\.type: unknown device type "toaster"/),
      "devices.1.generator.period_s: Expected number to be greater or equal to 0.001",
      "devices.1.generator.min: must not exceed max",
      expect.stringMatching(/^devices\.2\.generator\.kind: unknown generator "fractal"/),
    ]);
    const q = problems(() =>
      validateScenario({
        devices: [
          { type: "toaster" },
          { type: "temperature", generator: { kind: "sine", period_s: -1, min: 5, max: 1 } },
          { type: "temperature", G: "3", generator: { kind: "fractal" } },
          { type: "button", generator: { kind: "actuator" } },
        ],
        thresholds: ["p99_toast_ms < 3", "errors ="],
        chaos: [{ at_s: 100, action: "drop" }],
        duration_s: 10,
      }),
    );
    expect(q).toEqual([
      expect.stringMatching(/^devices\.0\.type: unknown device type "toaster"/),
      "devices.1.generator.period_s: Expected number to be greater or equal to 0.001",
      "devices.1.generator.min: must not exceed max",
      expect.stringMatching(/^devices\.2\.generator\.kind: unknown generator "fractal"/),
      "devices.3.generator: device type button (D 5) is not an actuator",
      "chaos.0.at_s: after the end of the run (duration_s 10)",
      expect.stringMatching(/^thresholds\.0: unknown metric "p99_toast_ms"/),
      expect.stringMatching(/^thresholds\.1: "errors =" is not/),
    ]);
  });

  it("bounds the cleanup: 30 s by default, a time above 0 when given", () => {
    const devices = [{ type: "relay" }];
    expect(validateScenario({ devices }).cleanup_timeout_s).toBe(30);
    expect(validateScenario({ devices, cleanup_timeout_s: 2.5 }).cleanup_timeout_s).toBe(2.5);
    expect(problems(() => validateScenario({ devices, cleanup_timeout_s: 0 }))).toEqual([expect.stringMatching(/^cleanup_timeout_s: /)]);
  });

  it("says one thing per path: a missing generator field once, and what a choice allows", () => {
    expect(
      problems(() =>
        validateScenario({
          devices: [{ type: "temperature", generator: { kind: "sine", min: 1, max: 5 } }],
          chaos: [{ at_s: 1, action: "explode", blocks: 1 }],
          duration_s: 10,
        }),
      ),
    ).toEqual(["chaos.0.action: must be one of drop, pause, burst (got \"explode\")", "devices.0.generator.period_s: required, a number"]);
  });

  it("refuses node ids the service would refuse and ports used twice", () => {
    expect(problems(() => validateScenario({ blocks: { count: 2, node_id: "AB{index}" }, devices: [{ type: "relay" }] }))).toEqual([
      'blocks.node_id: gives "AB1", not 12-64 letters and digits',
    ]);
    expect(
      problems(() => validateScenario({ devices: [{ type: "relay", G: "1" }, { type: "relay", G: "1" }] })),
    ).toEqual(["devices.1.G: port 1 with V 0 D 1002 is used twice"]);
    // The path names the entry in the file, also when an entry before it is refused.
    expect(
      problems(() => validateScenario({ devices: [{ type: "toaster" }, { type: "relay", G: "1" }, { type: "relay", G: "1" }] })),
    ).toEqual([expect.stringMatching(/^devices\.0\.type: unknown device type/), "devices.2.G: port 1 with V 0 D 1002 is used twice"]);
  });

  it("reports a YAML syntax error with its source", () => {
    expect(problems(() => parseScenarioText("devices: [", "fleet.yaml"))[0]).toMatch(/^fleet\.yaml: /);
  });

  it("builds a scenario from flags", () => {
    const s = validateScenario(scenarioFromFlags({ blocks: 50, devices: 3, rate: 2, duration: 4, seed: 9 }));
    expect(s.blocks.count).toBe(50);
    expect(s.seed).toBe(9);
    expect(s.duration_s).toBe(4);
    expect(s.devices.map((d) => d.type)).toEqual(["temperature", "relay", "humidity"]);
    // 2 readings per second per block, spread over its two periodic sensors.
    expect(s.devices.map((d) => d.rate)).toEqual([1, 1, 1]);
  });
});

describe("thresholds", () => {
  it("parse and check against metrics; missing data fails", () => {
    const ts = ["p99_command_ms < 50", "errors == 0", "events_per_s >= 10", "p99_callback_ms <= 1000"].map(parseThreshold);
    const metrics = { p99_command_ms: 12.5, errors: 3, events_per_s: 10, p99_callback_ms: null } as never;
    expect(checkThresholds(ts, metrics).map((r) => [r.text, r.passed, r.actual])).toEqual([
      ["p99_command_ms < 50", true, 12.5],
      ["errors == 0", false, 3],
      ["events_per_s >= 10", true, 10],
      ["p99_callback_ms <= 1000", false, null],
    ]);
    expect(() => parseThreshold("p99 < x")).toThrow(/is not "<metric> <op> <number>"/);
  });
});
