/** Shorthands over the inject() harness for the core server tests: user calls, block calls, envelopes. */
import { expect } from "vitest";
import type { TestServer } from "./server.js";

export interface Answer<T = unknown> {
  status: number;
  body: T;
  text: string;
}

export function withToken(path: string, token: string): string {
  return `${path}${path.includes("?") ? "&" : "?"}user_access_token=${encodeURIComponent(token)}`;
}

function answer<T>(res: { statusCode: number; body: string }): Answer<T> {
  let body: unknown = undefined;
  try {
    body = res.body === "" ? undefined : JSON.parse(res.body);
  } catch {
    body = undefined;
  }
  return { status: res.statusCode, body: body as T, text: res.body };
}

/** A user-level call with the user's token in the query (the first user's by default). */
export async function asUser<T = { result: number; error: string | null; id: number; data: unknown }>(
  t: TestServer,
  method: "GET" | "POST" | "PUT" | "DELETE",
  path: string,
  payload?: unknown,
  token: string = t.token,
): Promise<Answer<T>> {
  const res = await t.api({ method, url: withToken(path, token), ...(payload === undefined ? {} : { payload: payload as object }) });
  return answer<T>(res);
}

/** A block-level call with the block token in X-Service-Token. */
export async function asBlock<T = { result: number; error: string | null; id: number }>(
  t: TestServer,
  node: string,
  token: string,
  kind: "data" | "heartbeat" | "config" | "commands",
  payload?: unknown,
): Promise<Answer<T>> {
  const res = await t.api({
    method: kind === "commands" ? "GET" : "POST",
    url: `/block/${node}/${kind}`,
    headers: { "x-service-token": token },
    ...(payload === undefined ? {} : { payload: payload as object }),
  });
  return answer<T>(res);
}

export const OK = { result: 1, error: null, id: 0 };

/** Asserts a refusal: the status, the envelope with result 0, and an error naming `mentions`. */
export function expectRefused(a: Answer, status: number, ...mentions: (string | RegExp)[]): void {
  expect({ status: a.status, text: a.text }).toMatchObject({ status });
  const body = a.body as { result: unknown; error: unknown; id: unknown };
  expect(body).toEqual({ result: 0, error: expect.any(String), id: 0 });
  for (const m of mentions) expect(body.error).toMatch(m);
}

let nodeSeq = 0;
/** A fresh node id (12+ alphanumerics) per call, so that tests can share one server. */
export function freshNode(prefix: string): string {
  nodeSeq += 1;
  return `${prefix}${String(nodeSeq).padStart(Math.max(4, 13 - prefix.length), "0")}`;
}
