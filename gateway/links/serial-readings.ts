/**
 * What a Ninja serial frame means for the server, shared by the serial link and `blockkit sim
 * replay` so that both report the same things in the same place:
 *  - DEVICE readings are data readings;
 *  - PLUGIN / UNPLUG are config events of that type on the device;
 *  - the firmware version is a config event of type `VERSION` with the version as its DA, on the
 *    version device `<node>_0_0_1003` (the server keeps it in that device's meta:
 *    `meta.config.VERSION.payload.DA`). The original firmwares (0.47, V12_1.00) answer the version
 *    query with an ACK; a DEVICE frame for G "0", D 1003 is accepted too.
 * ACK frames of other commands and ERROR frames carry no reading.
 */
import { type NodeDevice, type SerialFrame, VERSION_QUERY } from "../../protocol/serial-frames.js";
import type { Reading } from "../agent/types.js";

/** The config type under which the firmware version is reported. */
export const VERSION_CONFIG = "VERSION";

/** The version in a DEVICE or ACK entry answering the version query, else null. */
export function versionIn(d: NodeDevice): string | null {
  if (d.G !== VERSION_QUERY.G || d.V !== VERSION_QUERY.V || d.D !== VERSION_QUERY.D) return null;
  return d.DA && d.DA !== VERSION_QUERY.DA ? d.DA : null;
}

/** The config event that reports firmware `version`. */
export function versionReading(version: string): Reading {
  return { G: VERSION_QUERY.G, V: VERSION_QUERY.V, D: VERSION_QUERY.D, DA: VERSION_CONFIG, kind: "config", value: version };
}

/** A config event of `type` on the device of `d` (its DA, when the frame has one, goes along). */
export function configReading(d: NodeDevice, type: string): Reading {
  return { G: d.G, V: d.V, D: d.D, DA: type, kind: "config", ...(d.DA !== undefined ? { value: d.DA } : {}) };
}

/** Every reading a frame carries, in order. */
export function frameReadings(frame: SerialFrame): Reading[] {
  switch (frame.kind) {
    case "DEVICE":
      return frame.devices.flatMap((d): Reading[] => {
        const v = versionIn(d);
        if (v !== null) return [versionReading(v)];
        if (d.G === VERSION_QUERY.G && d.D === VERSION_QUERY.D) return [];
        return d.DA === undefined ? [] : [{ G: d.G, V: d.V, D: d.D, DA: d.DA, kind: "data" }];
      });
    case "ACK":
      return frame.devices.flatMap((d) => {
        const v = versionIn(d);
        return v === null ? [] : [versionReading(v)];
      });
    case "PLUGIN":
    case "UNPLUG":
      return frame.devices.map((d) => configReading(d, frame.kind));
    case "ERROR":
      return [];
  }
}
