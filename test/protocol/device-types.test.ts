import { describe, expect, it } from "vitest";
import { cssClass, deviceType } from "../../protocol/device-types.js";

describe("device-type table", () => {
  it.each([
    [9, "temperature", "Temperature", 1, 0, 1],
    [5, "button", "Push Button", 1, 0, 0],
    [11, "rf433", "RF 433MHz", 1, 1, 0],
    [1002, "relay", "Relay", 0, 1, 0],
    [1004, "camera", "Web Camera", 1, 1, 0],
    [1000, "rgbled", "On Board RGB LED", 0, 1, 0],
    [30, "humidity", "RF Humidity", 1, 0, 1],
    [2000, "sandbox", "Sandbox", 1, 1, 1],
  ])("V 0, D %d is %s (%s)", (d, type, name, sensor, actuator, series) => {
    expect(deviceType(0, d)).toMatchObject({
      device_type: type,
      default_name: name,
      is_sensor: sensor,
      is_actuator: actuator,
      has_time_series: series,
    });
  });

  it("unknown pairs become type unknown, neither sensor nor actuator, named after their ids", () => {
    expect(deviceType(0, 4242)).toEqual({
      device_type: "unknown",
      default_name: "Unknown device 0:4242",
      is_sensor: 0,
      is_actuator: 0,
      has_time_series: 0,
      numeric: false,
    });
    expect(deviceType(3, 9).device_type).toBe("unknown"); // only vendor 0 is in the table
  });

  it("css_class names the type and its roles", () => {
    expect(cssClass(deviceType(0, 11))).toBe("rf433 sensor actuator");
    expect(cssClass(deviceType(0, 1002))).toBe("relay actuator");
    expect(cssClass(deviceType(0, 4242))).toBe("unknown");
  });
});
