/** Small HTTP helpers over real sockets (global fetch, i.e. undici) for end-to-end tests. */

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
