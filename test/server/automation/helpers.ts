/** Helpers of the automation tests: a local HTTP receiver and bounded waiting. */
import { type IncomingHttpHeaders, type Server, createServer } from "node:http";
import type { AddressInfo } from "node:net";

export interface Received {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

export interface Receiver {
  url: string;
  received: Received[];
  /** The status answered to the next requests (default 200). */
  status: number;
  /** Resolves with the n-th request (1-based) once it arrived; rejects after `ms`. */
  nth(n: number, ms?: number): Promise<Received>;
  close(): Promise<void>;
}

/** A real HTTP server on loopback that records every request. */
export async function startReceiver(): Promise<Receiver> {
  const waiters: (() => void)[] = [];
  const r: Receiver = {
    url: "",
    received: [],
    status: 200,
    nth(n, ms = 5000) {
      return new Promise((resolve, reject) => {
        const check = (): boolean => {
          const got = r.received[n - 1];
          if (!got) return false;
          clearTimeout(timer);
          resolve(got);
          return true;
        };
        const timer = setTimeout(() => reject(new Error(`request ${n} did not arrive within ${ms} ms (got ${r.received.length})`)), ms);
        if (!check()) waiters.push(() => void check());
      });
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      r.received.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers, body: Buffer.concat(chunks) });
      res.writeHead(r.status, { "content-type": "application/json" }).end("{}");
      for (const w of waiters.splice(0)) w();
    });
  });
  server.keepAliveTimeout = 1000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  r.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const close = r.close;
  r.close = () => {
    server.closeAllConnections();
    return close();
  };
  return r;
}

/** Polls `check` until it returns a value other than undefined, at most `ms`. */
export async function waitFor<T>(check: () => Promise<T | undefined> | T | undefined, ms = 5000, what = "condition"): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v !== undefined) return v;
    if (Date.now() > until) throw new Error(`${what} not met within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
