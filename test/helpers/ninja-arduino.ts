/**
 * A fake of the original Arduino Ethernet block library (NinjaBlock, User-Agent `Ninja Arduino 1.1`)
 * on a raw TCP socket, sending the bytes it was measured to send:
 *  - POST /rest/v0/block/<node>/data: Host, User-Agent, Content-Type, Accept, X-Ninja-Token and
 *    Content-Length headers, a body built by string concatenation (`"GUID": "…","G": "0","V": 0,…`,
 *    a space after each colon), then a stray `\r\n` (println), then it half-closes without reading;
 *  - GET /rest/v0/block/<node>/commands with the same headers (Content-Type included, no body):
 *    ignores the status line, finds the end of the headers by counting 4 CR/LF bytes in a row,
 *    looks at most 128 body bytes, and parses the command by string matching (a value after `":`
 *    that starts with `"` is a string: G or DA; otherwise a number up to the next `,`: V or D),
 *    then closes. It never looks at Content-Length: it stops reading when the server closes.
 */
import { type Socket, connect } from "node:net";

/** Bytes of the body the library keeps (its DATA_SIZE buffer). */
export const ARDUINO_BODY_BYTES = 128;

export interface ArduinoCommand {
  G?: string;
  V?: number;
  D?: number;
  DA?: string;
}

export interface PollResult {
  /** The first command as the library's string matching saw it; null when it found no DA string. */
  command: ArduinoCommand | null;
  /** A number value without a `,` after it inside the 128 bytes: the real library spins forever. */
  hung: boolean;
  /** Everything that arrived (for the test's own assertions; the library never looks at it). */
  raw: string;
}

export class NinjaArduinoClient {
  constructor(
    private readonly host: string,
    private readonly port: number,
    readonly nodeId: string,
    private readonly token: string,
    private readonly userAgent = "Ninja Arduino 1.1",
  ) {}

  private headers(post: boolean): string {
    return (
      `${post ? "POST" : "GET"} /rest/v0/block/${this.nodeId}/${post ? "data" : "commands"} HTTP/1.1\r\n` +
      `Host: ${this.host}\r\n` +
      `User-Agent: ${this.userAgent}\r\n` +
      "Content-Type: application/json\r\n" +
      "Accept: application/json\r\n" +
      `X-Ninja-Token: ${this.token}\r\n`
    );
  }

  /** The body `NinjaBlock.send()` builds: DA quoted when given as text, bare when a number. */
  static body(nodeId: string, d: { G: string; V: number; D: number; DA: string | number }): string {
    const da = typeof d.DA === "number" ? String(d.DA) : `"${d.DA}"`;
    return `{"GUID": "${nodeId}_${d.G}_${d.V}_${d.D}","G": "${d.G}","V": ${d.V},"D": ${d.D},"DA": ${da}}`;
  }

  /**
   * Sends one reading and half-closes at once. Resolves with what the server sent back (the
   * library itself never reads it) once the server closed its side.
   */
  post(d: { G: string; V: number; D: number; DA: string | number }): Promise<string> {
    const body = NinjaArduinoClient.body(this.nodeId, d);
    const socket = this.open();
    const got = collect(socket);
    socket.write(`${this.headers(true)}Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}\r\n`);
    socket.end();
    return got;
  }

  /** One long-poll, read and parsed the way the library does. Fails if the answer never ends within `ms`. */
  async poll(ms = 10_000): Promise<PollResult> {
    const socket = this.open();
    const got = collect(socket, ms);
    socket.write(`${this.headers(false)}\r\n`);
    const raw = await got;
    return { ...parseLikeTheLibrary(raw), raw };
  }

  private open(): Socket {
    const socket = connect({ host: "127.0.0.1", port: this.port });
    socket.setNoDelay(true);
    return socket;
  }
}

/** All the bytes until the server closes (or `ms` passes: then it rejects, the socket destroyed). */
function collect(socket: Socket, ms = 10_000): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`the server did not close the connection within ${ms} ms`));
    }, ms);
    socket.on("data", (c: Buffer) => chunks.push(c));
    socket.on("error", (err) => {
      clearTimeout(timer);
      reject(err);
    });
    socket.on("close", () => {
      clearTimeout(timer);
      resolve(Buffer.concat(chunks).toString("latin1"));
    });
  });
}

/**
 * The library's receive(): the header end by 4 CR/LF in a row, then every body byte below 128 is
 * checked for a preceding `":`; a quoted value is read to its closing quote (G or DA), a bare one
 * to the next `,` (V or D). Nothing stops at the first command: a later command inside the 128
 * bytes overwrites the values of the first (why the server sends one command per answer).
 */
export function parseLikeTheLibrary(raw: string): { command: ArduinoCommand | null; hung: boolean } {
  let crlf = 0;
  let i = 0;
  for (; i < raw.length && crlf !== 4; i++) {
    const c = raw[i];
    crlf = c === "\r" || c === "\n" ? crlf + 1 : 0;
  }
  if (crlf !== 4) return { command: null, hung: false };
  const body = raw.slice(i);
  const cmd: ArduinoCommand = {};
  let gotData = false;
  for (let k = 2; k < Math.min(body.length, ARDUINO_BODY_BYTES); k++) {
    if (body[k - 2] !== '"' || body[k - 1] !== ":") continue;
    const key1 = body[k - 3];
    const key2 = body[k - 4];
    if (body[k] === '"') {
      // The inner read loops are not bounded by the buffer: they read on from the socket.
      const end = body.indexOf('"', k + 1);
      if (end === -1) return { command: null, hung: true };
      const value = body.slice(k + 1, end);
      if (key1 === "G") cmd.G = value;
      else if (key2 === "D" && key1 === "A") {
        cmd.DA = value;
        gotData = true;
      }
      k = end;
    } else if (key1 === "D" || key1 === "V") {
      const end = body.indexOf(",", k);
      if (end === -1) return { command: null, hung: true };
      const n = Number.parseInt(body.slice(k, end), 10);
      if (key1 === "D") cmd.D = n;
      else cmd.V = n;
      k = end;
    }
  }
  return { command: gotData ? cmd : null, hung: false };
}
