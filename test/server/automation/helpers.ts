/** Helpers of the automation tests: a local HTTP receiver and bounded waiting. */
import { type IncomingHttpHeaders, type Server, createServer } from "node:http";
import type { AddressInfo } from "node:net";

export interface Received {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
  /** When it arrived (Date.now()). */
  at: number;
}

export interface Receiver {
  url: string;
  received: Received[];
  /** The status answered to the requests (default 200), after those of `statuses`. */
  status: number;
  /** Statuses answered first, one per request. */
  statuses: number[];
  /** While true, requests are recorded but not answered until release(). */
  hold: boolean;
  release(): void;
  /** Resolves with the n-th request (1-based) once it arrived; rejects after `ms`. */
  nth(n: number, ms?: number): Promise<Received>;
  close(): Promise<void>;
}

/** A real HTTP server on loopback that records every request; on `port` when given (a receiver back up), else a free one. */
export async function startReceiver(port = 0): Promise<Receiver> {
  let waiters: (() => boolean)[] = [];
  const held: (() => void)[] = [];
  const r: Receiver = {
    url: "",
    received: [],
    status: 200,
    statuses: [],
    hold: false,
    release() {
      r.hold = false;
      for (const f of held.splice(0)) f();
    },
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
        if (!check()) waiters.push(check);
      });
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      r.received.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers, body: Buffer.concat(chunks), at: Date.now() });
      const status = r.statuses.shift() ?? r.status;
      const answer = (): void => void res.writeHead(status, { "content-type": "application/json" }).end("{}");
      if (r.hold) held.push(answer);
      else answer();
      waiters = waiters.filter((w) => !w());
    });
  });
  server.keepAliveTimeout = 1000;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", resolve);
  });
  r.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const close = r.close;
  r.close = () => {
    server.closeAllConnections();
    return close();
  };
  return r;
}
