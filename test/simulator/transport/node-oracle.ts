/**
 * Node's own HTTP/1.1 response parser (llhttp, through the public node:http client) as an oracle:
 * a raw TCP server writes the bytes of a case and closes, and `http.get` reads them. Used by the
 * differential fuzz of simulator/transport/response-parser.ts.
 */
import { once } from "node:events";
import { get } from "node:http";
import { type AddressInfo, type Server, type Socket, createServer } from "node:net";

export type OracleOutcome =
  | { ok: true; status: number; headers: string[]; body: Buffer; trailers: string[] }
  | { ok: false; error: string };

export class NodeOracle {
  private server: Server | undefined;
  private port = 0;
  private readonly cases = new Map<string, Buffer>();
  private readonly sockets = new Set<Socket>();
  private seq = 0;

  async start(): Promise<void> {
    this.server = createServer((socket) => {
      this.sockets.add(socket);
      socket.on("close", () => this.sockets.delete(socket));
      socket.on("error", () => undefined);
      let head = "";
      const onData = (d: Buffer): void => {
        head += d.toString("latin1");
        if (!head.includes("\r\n\r\n")) return;
        socket.off("data", onData);
        const id = head.split(" ")[1]?.slice(1) ?? "";
        const bytes = this.cases.get(id);
        this.cases.delete(id);
        socket.end(bytes ?? Buffer.alloc(0));
      };
      socket.on("data", onData);
    });
    this.server.listen(0, "127.0.0.1");
    await once(this.server, "listening");
    this.port = (this.server.address() as AddressInfo).port;
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((r) => (this.server ? this.server.close(() => r()) : r()));
  }

  /** What node:http makes of `bytes` as the whole answer to one GET on a connection that then closes. */
  parse(bytes: Buffer): Promise<OracleOutcome> {
    const id = String(++this.seq);
    this.cases.set(id, bytes);
    return new Promise<OracleOutcome>((resolve) => {
      let done = false;
      const finish = (o: OracleOutcome): void => {
        if (done) return;
        done = true;
        resolve(o);
      };
      const req = get({ host: "127.0.0.1", port: this.port, path: `/${id}`, agent: false }, (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("error", (err) => finish({ ok: false, error: err.message }));
        res.on("end", () => {
          if (!res.complete) return finish({ ok: false, error: "incomplete" });
          finish({ ok: true, status: res.statusCode ?? 0, headers: res.rawHeaders, body: Buffer.concat(chunks), trailers: res.rawTrailers });
        });
        res.on("close", () => {
          if (!res.complete) finish({ ok: false, error: "closed before the end" });
        });
      });
      req.on("error", (err) => finish({ ok: false, error: `${(err as NodeJS.ErrnoException).code ?? ""} ${err.message}` }));
    });
  }
}
