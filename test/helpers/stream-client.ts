/** A live-stream client for tests: a real WebSocket (ws) that keeps every frame and waits for one. */
import WebSocket from "ws";
import { type StreamFrame, parseStreamFrame } from "../../protocol/stream.js";

export interface StreamClient {
  ws: WebSocket;
  frames: StreamFrame[];
  /** Resolves with the first frame (already received or to come) that matches, within `timeoutMs`. */
  next(match: (f: StreamFrame) => boolean, what: string, timeoutMs?: number): Promise<StreamFrame>;
  close(): Promise<void>;
}

export function openStream(url: string, headers: Record<string, string> = {}, options: WebSocket.ClientOptions = {}): Promise<StreamClient> {
  const ws = new WebSocket(url, { headers, ...options });
  const frames: StreamFrame[] = [];
  const waiters = new Set<() => void>();
  ws.on("message", (data) => {
    frames.push(parseStreamFrame(String(data)));
    for (const w of [...waiters]) w();
  });
  const client: StreamClient = {
    ws,
    frames,
    next(match, what, timeoutMs = 5000) {
      return new Promise((resolve, reject) => {
        let seen = 0;
        const check = (): void => {
          for (; seen < frames.length; seen++) {
            const f = frames[seen] as StreamFrame;
            if (match(f)) {
              done();
              resolve(f);
              return;
            }
          }
        };
        const timer = setTimeout(() => {
          done();
          reject(new Error(`${what}: no such frame within ${timeoutMs} ms; got ${JSON.stringify(frames).slice(0, 600)}`));
        }, timeoutMs);
        const done = (): void => {
          clearTimeout(timer);
          waiters.delete(check);
        };
        waiters.add(check);
        check();
      });
    },
    close() {
      if (ws.readyState === WebSocket.CLOSED) return Promise.resolve();
      return new Promise((resolve) => {
        ws.once("close", () => resolve());
        ws.terminate();
      });
    },
  };
  return new Promise((resolve, reject) => {
    ws.once("open", () => resolve(client));
    ws.once("error", reject);
    ws.once("unexpected-response", (_req, res) => {
      let body = "";
      res.on("data", (c: Buffer) => (body += String(c)));
      res.on("end", () => reject(Object.assign(new Error(`refused: ${res.statusCode} ${body}`), { status: res.statusCode, body, headers: res.headers })));
    });
  });
}
