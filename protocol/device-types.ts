/**
 * The device-type table: (V, D) -> kind, default name, sensor/actuator flags, time series, and
 * whether DA is a number. Starts from spec/device-types.md (vendor id 0).
 */
export interface DeviceType {
  device_type: string;
  default_name: string;
  is_sensor: 0 | 1;
  is_actuator: 0 | 1;
  has_time_series: 0 | 1;
  /** DA is numeric: last_data.DA is reported as a number when it parses as one. */
  numeric: boolean;
}

type Row = [number, string, string, 0 | 1, 0 | 1, 0 | 1, boolean];

const ROWS: Row[] = [
  [0, "unknown", "Unknown accessory", 1, 0, 1, true],
  [1, "temperature", "Temperature", 1, 0, 1, true],
  [2, "accelerometer", "Accelerometer", 1, 0, 0, false],
  [3, "orientation", "Jiggle", 1, 0, 0, false],
  [5, "button", "Push Button", 1, 0, 0, true],
  [6, "light", "Light Level", 1, 0, 1, true],
  [7, "PIR", "Motion Detector", 1, 0, 0, true],
  [8, "humidity", "Humidity", 1, 0, 1, true],
  [9, "temperature", "Temperature", 1, 0, 1, true],
  [10, "distance", "Distance", 1, 0, 1, true],
  [11, "rf433", "RF 433MHz", 1, 1, 0, false],
  [12, "sound", "Sound", 1, 0, 1, true],
  [13, "temperature", "RF Temperature", 1, 0, 1, true],
  [20, "temperature", "Weather Temperature", 1, 0, 1, true],
  [21, "humidity", "Weather Humidity", 1, 0, 1, true],
  [22, "rainfall", "Rainfall", 1, 0, 1, true],
  [23, "wind_direction", "Wind Direction", 1, 0, 1, true],
  [24, "wind_speed", "Wind Speed", 1, 0, 1, true],
  [30, "humidity", "RF Humidity", 1, 0, 1, true],
  [31, "temperature", "RF Temperature", 1, 0, 1, true],
  [103, "sms", "SMS", 0, 1, 0, false],
  [104, "filehost", "File Host", 0, 1, 0, false],
  [106, "email", "Email", 0, 1, 0, false],
  [108, "webhook", "Webhooks", 1, 1, 0, false],
  [999, "rgbled8", "Status Light", 0, 1, 0, false],
  [1000, "rgbled", "On Board RGB LED", 0, 1, 0, false],
  [1001, "rf433", "RF 433MHz Transmitter", 0, 1, 0, false],
  [1002, "relay", "Relay", 0, 1, 0, true],
  [1003, "firmware", "Firmware Version", 1, 0, 0, false],
  [1004, "camera", "Web Camera", 1, 1, 0, false],
  [1005, "network", "Network", 1, 0, 0, false],
  [1007, "rgbled", "Eyes RGB LED", 0, 1, 0, false],
  [2000, "sandbox", "Sandbox", 1, 1, 1, true],
  [7000, "display", "LED Display", 0, 1, 0, false],
];

const TABLE = new Map<number, DeviceType>(
  ROWS.map(([d, device_type, default_name, is_sensor, is_actuator, has_time_series, numeric]) => [
    d,
    { device_type, default_name, is_sensor, is_actuator, has_time_series, numeric },
  ]),
);

/** Well-known device ids used by the server and the gateway. */
export const D = {
  button: 5,
  rf433: 11,
  sms: 103,
  filehost: 104,
  email: 106,
  webhook: 108,
  relay: 1002,
  firmware: 1003,
  camera: 1004,
  sandbox: 2000,
} as const;

/** The type of (V, D). Unknown pairs become type `unknown`, neither sensor nor actuator. */
export function deviceType(v: number, d: number): DeviceType {
  const known = v === 0 ? TABLE.get(d) : undefined;
  if (known) return known;
  return {
    device_type: "unknown",
    default_name: `Unknown device ${v}:${d}`,
    is_sensor: 0,
    is_actuator: 0,
    has_time_series: 0,
    numeric: false,
  };
}

/** The space-separated class words of a device (`css_class`). */
export function cssClass(t: DeviceType): string {
  const words = [t.device_type];
  if (t.is_sensor) words.push("sensor");
  if (t.is_actuator) words.push("actuator");
  return words.join(" ");
}
