/**
 * How the parts of the scale-out bench (bench/scaleout.bench.ts) set up and ask their servers: the
 * admin token and node ids, a JSON call, blocks activated over HTTP or claimed through the store
 * (faster for thousands), and the polls a server holds. Apart so that the ingest and polls parts
 * (scaleout-ingest.ts, scaleout-polls.ts) share them.
 */

import { untilHeldPolls } from "./fixtures/held-polls.js";

export const ADMIN = "bench-admin-token-scaleout-01";
export const nodeId = (i: number): string => `SCALE${String(i).padStart(8, "0")}`;

export async function json(url: string, init: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<unknown> {
  const res = await fetch(url, { ...init, headers: { "content-type": "application/json", ...init.headers } });
  const text = await res.text();
  if (!res.ok) throw new Error(`${init.method ?? "GET"} ${url}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : null;
}

export async function activate(port: number, n: number): Promise<{ nodes: string[]; tokens: string[] }> {
  const nodes = Array.from({ length: n }, (_, i) => nodeId(i));
  const tokens: string[] = [];
  for (const node of nodes) tokens.push(((await json(`http://127.0.0.1:${port}/rest/v0/block/${node}/activate?user_access_token=${ADMIN}`)) as { token: string }).token);
  return { nodes, tokens };
}

/** Blocks claimed and their tokens made through the store itself (10,000 activations over HTTP take minutes). */
export async function blocksInStore(dbUrl: string, n: number, name: (i: number) => string): Promise<[string, string][]> {
  const { openStore } = await import("../server/store/index.js");
  const { AuthService } = await import("../server/services/auth.js");
  const store = await openStore(dbUrl);
  try {
    const auth = new AuthService(store);
    const { userId } = await auth.user({ user_access_token: ADMIN });
    const now = Date.now();
    const pairs: [string, string][] = [];
    for (let i = 0; i < n; i += 200) {
      const chunk = Array.from({ length: Math.min(200, n - i) }, (_, k) => name(i + k));
      pairs.push(
        ...(await Promise.all(
          chunk.map(async (node): Promise<[string, string]> => {
            await store.blocks.claim(node, userId, now, null);
            return [node, await auth.issue(userId, "block", { nodeId: node })];
          }),
        )),
      );
    }
    return pairs;
  } finally {
    await store.close();
  }
}

export async function held(port: number): Promise<number> {
  return ((await json(`http://127.0.0.1:${port}/healthz`)) as { heldPolls: number }).heldPolls;
}

/** Waits until the server at `port` holds n polls (bounded). */
export async function untilHeld(port: number, n: number, ms: number): Promise<void> {
  await untilHeldPolls(() => held(port), n, { timeoutMs: ms, maxMs: 250, what: `on :${port}` });
}
