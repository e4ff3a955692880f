/**
 * sd_notify for `Type=notify` units: READY=1 once started, WATCHDOG=1 every half of
 * WATCHDOG_USEC, STOPPING=1 on the way out. Node has no unix datagram sockets, so each message is
 * sent by `systemd-notify --pid=<ours>` (the unit sets NotifyAccess=all, since the sender is a
 * child process), or by `socat` when systemd-notify is missing. Without NOTIFY_SOCKET nothing
 * happens.
 */
import { execFile } from "node:child_process";
import type { Logger } from "pino";

export class SdNotify {
  private timer: NodeJS.Timeout | undefined;
  private warned = false;
  readonly socket: string | undefined;

  constructor(
    private readonly log: Logger,
    private readonly env: NodeJS.ProcessEnv = process.env,
  ) {
    this.socket = env.NOTIFY_SOCKET;
  }

  /** Sends READY=1 and starts the watchdog pings when the unit has a watchdog. */
  ready(healthy: () => boolean): Promise<void> {
    const usec = Number(this.env.WATCHDOG_USEC ?? 0);
    const pid = Number(this.env.WATCHDOG_PID ?? process.pid);
    if (this.socket && usec > 0 && pid === process.pid) {
      this.timer = setInterval(() => {
        if (healthy()) void this.send("WATCHDOG=1");
      }, Math.max(500, usec / 2000));
      this.timer.unref();
    }
    return this.send("READY=1");
  }

  stopping(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    return this.send("STOPPING=1");
  }

  /** Sends one state line; never rejects. */
  send(state: string): Promise<void> {
    const socket = this.socket;
    if (!socket) return Promise.resolve();
    return new Promise((resolve) => {
      execFile("systemd-notify", [`--pid=${process.pid}`, state], { timeout: 5000 }, (err) => {
        if (!err) return resolve();
        // Abstract sockets start with "@"; socat spells them ABSTRACT-SENDTO.
        const target = socket.startsWith("@") ? `ABSTRACT-SENDTO:${socket.slice(1)}` : `UNIX-SENDTO:${socket}`;
        const child = execFile("socat", ["-u", "STDIN", target], { timeout: 5000 }, (e2) => {
          if (e2 && !this.warned) {
            this.warned = true;
            this.log.warn({ err: e2.message }, "sd_notify failed: neither systemd-notify nor socat could reach NOTIFY_SOCKET");
          }
          resolve();
        });
        child.stdin?.end(state);
      });
    });
  }
}
