import { Value } from "@sinclair/typebox/value";
import { describe, expect, it } from "vitest";
import {
  CallbackBody,
  ClaimBody,
  ConfigEvent,
  DataEvent,
  DevicePut,
  HeartbeatBody,
  HistoryQuery,
  MAX_DA_LENGTH,
  MAX_TIMESTAMP,
  MIN_TIMESTAMP,
  daText,
} from "../../protocol/payloads.js";

const ok = { G: "0", V: 0, D: 9, DA: "21.5" };

describe("block event payloads", () => {
  it("accepts the spec's data event, G as a number, DA as a number, and extra fields", () => {
    expect(Value.Check(DataEvent, ok)).toBe(true);
    expect(Value.Check(DataEvent, { ...ok, G: 1 })).toBe(true);
    expect(Value.Check(DataEvent, { ...ok, DA: 21.5 })).toBe(true);
    expect(Value.Check(DataEvent, { ...ok, GUID: "x", name: "n", extra: [1] })).toBe(true);
    expect(Value.Check(DataEvent, { ...ok, TIMESTAMP: MIN_TIMESTAMP, KEY: "k".repeat(128) })).toBe(true);
  });

  it.each([
    ["G missing", { V: 0, D: 9, DA: "1" }],
    ["V missing", { G: "0", D: 9, DA: "1" }],
    ["D missing", { G: "0", V: 0, DA: "1" }],
    ["DA missing", { G: "0", V: 0, D: 9 }],
    ["V a string that is not digits", { ...ok, V: "x" }],
    ["V Infinity as a string", { ...ok, V: "Infinity" }],
    ["D a fractional string", { ...ok, D: "9.5" }],
    ["D fractional", { ...ok, D: 9.5 }],
    ["D negative", { ...ok, D: -1 }],
    ["G with punctuation", { ...ok, G: "0/1" }],
    ["G empty", { ...ok, G: "" }],
    ["DA an object", { ...ok, DA: { x: 1 } }],
    ["DA too long", { ...ok, DA: "x".repeat(MAX_DA_LENGTH + 1) }],
    ["TIMESTAMP before 2000", { ...ok, TIMESTAMP: MIN_TIMESTAMP - 1 }],
    ["TIMESTAMP after 2200", { ...ok, TIMESTAMP: MAX_TIMESTAMP + 1 }],
    ["TIMESTAMP negative", { ...ok, TIMESTAMP: -5 }],
    ["KEY empty", { ...ok, KEY: "" }],
    ["KEY too long", { ...ok, KEY: "k".repeat(129) }],
  ])("refuses a data event with %s", (_name, body) => {
    expect(Value.Check(DataEvent, body)).toBe(false);
  });

  it("heartbeats are a non-empty array of data events", () => {
    expect(Value.Check(HeartbeatBody, [ok, { ...ok, D: 8 }])).toBe(true);
    expect(Value.Check(HeartbeatBody, ok)).toBe(false);
    expect(Value.Check(HeartbeatBody, [])).toBe(false);
    expect(Value.Check(HeartbeatBody, [ok, { G: "0" }])).toBe(false);
  });

  it("config events need a type and no DA", () => {
    expect(Value.Check(ConfigEvent, { G: "1", V: 0, D: 9, type: "UNPLUG" })).toBe(true);
    expect(Value.Check(ConfigEvent, { G: "1", V: 0, D: 9 })).toBe(false);
    expect(Value.Check(ConfigEvent, { G: "1", V: 0, D: 9, type: "" })).toBe(false);
  });
});

describe("user API bodies and queries", () => {
  it("PUT /device takes optional DA and shortName", () => {
    expect(Value.Check(DevicePut, {})).toBe(true);
    expect(Value.Check(DevicePut, { DA: "1", shortName: "Lamp" })).toBe(true);
    expect(Value.Check(DevicePut, { shortName: "" })).toBe(false);
    expect(Value.Check(DevicePut, { DA: [] })).toBe(false);
  });

  it("POST /block needs a node id of 12+ alphanumerics", () => {
    expect(Value.Check(ClaimBody, { nodeid: "ABCDEF123456" })).toBe(true);
    expect(Value.Check(ClaimBody, { nodeid: "ABCDEF12345" })).toBe(false);
    expect(Value.Check(ClaimBody, { nodeid: "ABCDEF_123456" })).toBe(false);
    expect(Value.Check(ClaimBody, {})).toBe(false);
  });

  it("callbacks need an http(s) URL", () => {
    expect(Value.Check(CallbackBody, { url: "https://example.com/x" })).toBe(true);
    expect(Value.Check(CallbackBody, { url: "ftp://example.com/x" })).toBe(false);
    expect(Value.Check(CallbackBody, {})).toBe(false);
  });

  it("history queries: every unit and fn, nothing else", () => {
    for (const interval of ["1min", "15min", "6hour", "1day", "3month", "2year"]) {
      expect(Value.Check(HistoryQuery, { interval })).toBe(true);
    }
    for (const fn of ["mean", "sum", "min", "max", "stddev", "ss", "count"]) expect(Value.Check(HistoryQuery, { fn })).toBe(true);
    for (const interval of ["1week", "hour", "1 hour", "-1day", "1.5hour", "1234567min"]) {
      expect(Value.Check(HistoryQuery, { interval })).toBe(false);
    }
    expect(Value.Check(HistoryQuery, { fn: "median" })).toBe(false);
    expect(Value.Check(HistoryQuery, { from: -1 })).toBe(false);
    expect(Value.Check(HistoryQuery, { to: MAX_TIMESTAMP + 1 })).toBe(false);
  });

  it("daText writes numbers as decimal text and keeps strings", () => {
    expect(daText(21.5)).toBe("21.5");
    expect(daText("FF00FF")).toBe("FF00FF");
  });
});
