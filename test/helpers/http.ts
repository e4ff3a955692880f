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

/**
 * Repeats `attempt` until it returns a value other than undefined, for at most `timeoutMs`: for
 * conditions another party makes true (e.g. a held request having reached the server).
 */
export async function until<T>(attempt: () => Promise<T | undefined>, timeoutMs: number, what: string): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await attempt();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`${what} did not happen within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Resolves once `cond()` holds (checked every few ms), rejects after `timeoutMs`. For in-process state. */
export function waitFor(cond: () => boolean, timeoutMs: number, what: string): Promise<void> {
  return new Promise((done, fail) => {
    const timer = setTimeout(() => {
      clearInterval(check);
      fail(new Error(`${what} did not happen within ${timeoutMs} ms`));
    }, timeoutMs);
    const check = setInterval(() => {
      if (!cond()) return;
      clearInterval(check);
      clearTimeout(timer);
      done();
    }, 5);
  });
}
