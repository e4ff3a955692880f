/**
 * `--record FILE`: every frame received from hardware, appended as one JSON line:
 * `{"t":<epoch ms>,"link":"serial","frame":"<raw line>"}` for serial and
 * `{"t":…,"link":"mqtt","topic":"<topic>","frame":"<payload text>"}` for MQTT. The simulator replays
 * these files. Writes are buffered by the stream; a full disk is logged once, never fatal.
 */
import { type WriteStream, createWriteStream } from "node:fs";
import type { Logger } from "pino";
import type { FrameRecorder } from "../links/types.js";

export interface RecordedFrame {
  t: number;
  link: string;
  topic?: string;
  frame: string;
}

export class FileRecorder implements FrameRecorder {
  private stream: WriteStream | null = null;
  private failed = false;
  lines = 0;

  constructor(
    readonly file: string,
    private readonly log: Logger,
    private readonly clock: () => number = Date.now,
  ) {}

  start(): void {
    this.stream = createWriteStream(this.file, { flags: "a", mode: 0o600 });
    this.stream.on("error", (err) => {
      if (!this.failed) this.log.error({ err: err.message, file: this.file }, "recording frames failed: recording stops");
      this.failed = true;
      this.stream = null;
    });
  }

  record(link: string, frame: string, topic?: string): void {
    if (!this.stream) return;
    const line: RecordedFrame = topic === undefined ? { t: this.clock(), link, frame } : { t: this.clock(), link, topic, frame };
    this.stream.write(`${JSON.stringify(line)}\n`);
    this.lines++;
  }

  stop(): Promise<void> {
    const s = this.stream;
    this.stream = null;
    if (!s) return Promise.resolve();
    return new Promise((resolve) => s.end(() => resolve()));
  }
}
