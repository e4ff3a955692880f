/** Small HTTP helpers over real sockets (global fetch, i.e. undici) for end-to-end tests. */
import { type RequestListener, createServer } from "node:http";
import type { AddressInfo } from "node:net";

/** A server double on loopback (`url` without a path); close() ends its connections too, held ones included. */
export async function loopbackServer(handle: RequestListener): Promise<{ url: string; close(): Promise<void> }> {
  const server = createServer(handle);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export interface JsonAnswer<T = unknown> {
  status: number;
  body: T;
  text: string;
}

/** One request; the body is parsed as JSON when it is JSON, and left as text otherwise. */
export async function http<T = unknown>(
  url: string,
  init: { method?: string; json?: unknown; headers?: Record<string, string>; signal?: AbortSignal } = {},
): Promise<JsonAnswer<T>> {
  const headers: Record<string, string> = { ...init.headers };
  let body: string | undefined;
  if (init.json !== undefined) {
    headers["content-type"] = "application/json";
    body = JSON.stringify(init.json);
  }
  const res = await fetch(url, { method: init.method ?? "GET", headers, body, signal: init.signal });
  const text = await res.text();
  let parsed: unknown = undefined;
  try {
    parsed = text === "" ? undefined : JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  return { status: res.status, body: parsed as T, text };
}
