/**
 * The scenario file's schema (TypeBox). Times are in seconds, rates in events per second.
 * Value generators are validated separately, per `kind`, so that an error names the exact field
 * of the generator at fault instead of "no union variant matched".
 */
import { PORT_PATTERN } from "../../protocol/guid.js";
import { type Static, type TSchema, Type } from "@sinclair/typebox";

const Seconds = (description: string, minimum = 0) => Type.Number({ minimum, description });

export const ConstantGen = Type.Object(
  { kind: Type.Literal("constant"), value: Type.Union([Type.String({ maxLength: 4096 }), Type.Number()]) },
  { additionalProperties: false },
);
export const SineGen = Type.Object(
  {
    kind: Type.Literal("sine"),
    min: Type.Number({ default: 0 }),
    max: Type.Number({ default: 30 }),
    period_s: Seconds("period of the wave", 0.001),
    noise: Type.Number({ minimum: 0, default: 0, description: "standard deviation of the added noise" }),
    decimals: Type.Integer({ minimum: 0, maximum: 6, default: 1 }),
  },
  { additionalProperties: false },
);
export const WalkGen = Type.Object(
  {
    kind: Type.Literal("walk"),
    start: Type.Number({ default: 0 }),
    step: Type.Number({ minimum: 0, default: 1, description: "largest change between two readings" }),
    min: Type.Number({ default: -1e9 }),
    max: Type.Number({ default: 1e9 }),
    decimals: Type.Integer({ minimum: 0, maximum: 6, default: 1 }),
  },
  { additionalProperties: false },
);
export const ButtonGen = Type.Object(
  {
    kind: Type.Literal("button"),
    mean_interval_s: Seconds("mean time between presses (Poisson arrivals)", 0.001),
  },
  { additionalProperties: false },
);
export const RfGen = Type.Object(
  {
    kind: Type.Literal("rf"),
    codes: Type.Array(Type.String({ pattern: "^([01]{4,64}|[0-9A-Fa-f]{2,64})$" }), { minItems: 1, maxItems: 1000 }),
    mean_interval_s: Seconds("mean time between codes (Poisson arrivals)", 0.001),
  },
  { additionalProperties: false },
);
export const CameraGen = Type.Object(
  {
    kind: Type.Literal("camera"),
    width: Type.Integer({ minimum: 8, maximum: 2048, multipleOf: 8, default: 64 }),
    height: Type.Integer({ minimum: 8, maximum: 2048, multipleOf: 8, default: 48 }),
  },
  { additionalProperties: false },
);
export const ActuatorGen = Type.Object(
  { kind: Type.Literal("actuator"), initial: Type.String({ maxLength: 4096, default: "0" }) },
  { additionalProperties: false },
);

export const GENERATORS: Record<string, TSchema> = {
  constant: ConstantGen,
  sine: SineGen,
  walk: WalkGen,
  button: ButtonGen,
  rf: RfGen,
  camera: CameraGen,
  actuator: ActuatorGen,
};

export type GeneratorSpec =
  | Static<typeof ConstantGen>
  | Static<typeof SineGen>
  | Static<typeof WalkGen>
  | Static<typeof ButtonGen>
  | Static<typeof RfGen>
  | Static<typeof CameraGen>
  | Static<typeof ActuatorGen>;

export const DeviceSpec = Type.Object(
  {
    /** A device-type name (temperature, button, relay, camera, …) or "custom" with V and D. */
    type: Type.String({ minLength: 1, maxLength: 64 }),
    V: Type.Optional(Type.Integer({ minimum: 0, maximum: 999_999_999 })),
    D: Type.Optional(Type.Integer({ minimum: 0, maximum: 999_999_999 })),
    /** First port; devices of one entry with count > 1 take consecutive ports. */
    G: Type.Optional(Type.String({ pattern: PORT_PATTERN })),
    count: Type.Integer({ minimum: 1, maximum: 1000, default: 1 }),
    /** Periodic readings per second for periodic generators (sine, walk, constant). */
    rate: Type.Number({ minimum: 0, maximum: 1000, default: 1 }),
    event: Type.Union([Type.Literal("data"), Type.Literal("heartbeat")], { default: "data" }),
    /** The value generator; a default that suits the device type when left out. */
    generator: Type.Optional(Type.Unknown()),
  },
  { additionalProperties: false },
);

export const ChaosSpec = Type.Object(
  {
    at_s: Seconds("when the step runs, from the end of the warm-up"),
    action: Type.Union([Type.Literal("drop"), Type.Literal("pause"), Type.Literal("burst")]),
    /** How many blocks the step hits (chosen with the seeded random source). */
    blocks: Type.Integer({ minimum: 1, default: 1 }),
    /** drop/pause: how long the block stays down. */
    for_s: Type.Number({ minimum: 0, default: 5 }),
    /** burst: readings each hit block sends at once. */
    events: Type.Integer({ minimum: 1, maximum: 100_000, default: 100 }),
  },
  { additionalProperties: false },
);

export const ScenarioSchema = Type.Object(
  {
    name: Type.String({ maxLength: 128, default: "scenario" }),
    seed: Type.Integer({ minimum: 0, maximum: 4_294_967_295, default: 1 }),
    blocks: Type.Object(
      {
        count: Type.Integer({ minimum: 1, maximum: 200_000, default: 1 }),
        /** `{index}` (zero-padded to the width given as `{index:6}`) and `{seed}` are replaced. */
        node_id: Type.String({ minLength: 1, maxLength: 64, default: "SIM{seed}N{index:8}" }),
        /** How many blocks use the two-legged activation flow; the others use the direct flow. */
        two_legged: Type.Integer({ minimum: 0, default: 0 }),
      },
      { additionalProperties: false, default: {} },
    ),
    devices: Type.Array(DeviceSpec, { minItems: 1, maxItems: 100 }),
    ramp_up: Type.Object(
      {
        blocks_per_s: Type.Number({ exclusiveMinimum: 0, default: 500 }),
        /** Blocks started but not yet activated, at most; the ramp waits for the server beyond it. */
        max_pending: Type.Integer({ minimum: 1, default: 100 }),
      },
      { additionalProperties: false, default: {} },
    ),
    /**
     * The server's rate limit per credential (docs/api.md "Errors": 1,000 requests/s sustained): what
     * the simulator sends with the user token (direct activations, claims, command PUTs, callback
     * registrations, cleanup) is paced to stay under it, a ramp faster than that included. 0: not
     * paced. Shared out over the parts of a sharded run, like the other fleet-wide rates.
     */
    rate_limit: Type.Object(
      { requests_per_s: Type.Number({ minimum: 0, maximum: 1_000_000, default: 1000 }) },
      { additionalProperties: false, default: {} },
    ),
    warmup_s: Type.Number({ minimum: 0, default: 0 }),
    duration_s: Type.Number({ exclusiveMinimum: 0, default: 30 }),
    /** Commands the simulator PUTs as the user to random actuators, per second in total. */
    commands: Type.Object(
      { rate: Type.Number({ minimum: 0, maximum: 10_000, default: 1 }) },
      { additionalProperties: false, default: {} },
    ),
    /** Devices that get a callback to the simulator's own receiver. */
    callbacks: Type.Object(
      { devices: Type.Integer({ minimum: 0, maximum: 10_000, default: 10 }) },
      { additionalProperties: false, default: {} },
    ),
    chaos: Type.Array(ChaosSpec, { default: [] }),
    /** At the end (also after Ctrl-C): remove the run's callbacks and unpair its blocks. */
    cleanup: Type.Boolean({ default: false }),
    /** The cleanup's own time bound, seconds (= --cleanup-timeout): what is left after it is named, with the command that finishes it. */
    cleanup_timeout_s: Type.Number({ exclusiveMinimum: 0, maximum: 86_400, default: 30 }),
    /** Pass/fail conditions, e.g. `p99_command_ms < 50`, `errors == 0`. */
    thresholds: Type.Array(Type.String({ minLength: 3, maxLength: 200 }), { default: [] }),
  },
  { additionalProperties: false },
);

export type DeviceSpec = Omit<Static<typeof DeviceSpec>, "generator"> & { generator: GeneratorSpec };
export type ChaosSpec = Static<typeof ChaosSpec>;
export type Scenario = Omit<Static<typeof ScenarioSchema>, "devices"> & { devices: DeviceSpec[] };
