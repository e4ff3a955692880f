/**
 * Finding and opening the serial port. The port is a path (`/dev/ttyAMA0`, a `/dev/serial/by-id/…`
 * link) or a USB match (vendor id, product id, serial number) resolved through the binding's port
 * list each time it is opened, so a node plugged into another USB socket is found again.
 */
import type { SerialPortStream } from "@serialport/stream";
import { realpath, stat } from "node:fs/promises";
import { SerialPort } from "serialport";

/** A listed port (the fields of @serialport/bindings-interface PortInfo this link uses). */
export interface PortInfo {
  path: string;
  vendorId?: string;
  productId?: string;
  serialNumber?: string;
}

export interface UsbMatch {
  vendorId?: string;
  productId?: string;
  serialNumber?: string;
}

/** The seam to the hardware: the real binding by default, `SerialPortMock` in unit tests. */
export interface SerialBinding {
  list(): Promise<PortInfo[]>;
  create(path: string, baudRate: number): SerialPortStream;
  /**
   * What `path` is right now (null when gone). While a port is open the link compares this with its
   * value at open time: a pty whose peer died or a USB adapter pulled out does not always wake a
   * pending read, but its device node changes or disappears.
   */
  identify(path: string): Promise<string | null>;
}

export const nativeBinding: SerialBinding = {
  list: () => SerialPort.list(),
  create: (path, baudRate) => new SerialPort({ path, baudRate, autoOpen: false }) as unknown as SerialPortStream,
  identify: async (path) => {
    try {
      const real = await realpath(path);
      const st = await stat(real);
      return `${real}:${st.dev}:${st.ino}:${st.rdev}`;
    } catch {
      return null;
    }
  },
};

const lower = (s: string | undefined): string | undefined => s?.toLowerCase();

/** The path to open: the given one, or the first listed port matching every given USB field. */
export async function resolvePort(binding: SerialBinding, target: { path?: string; match?: UsbMatch }): Promise<string> {
  if (target.path) return target.path;
  const m = target.match ?? {};
  const ports = await binding.list();
  const found = ports.find(
    (p) =>
      (m.vendorId === undefined || lower(p.vendorId) === lower(m.vendorId)) &&
      (m.productId === undefined || lower(p.productId) === lower(m.productId)) &&
      (m.serialNumber === undefined || p.serialNumber === m.serialNumber),
  );
  if (!found) throw new Error(`no serial port matches ${JSON.stringify(m)} (seen: ${ports.map((p) => p.path).join(", ") || "none"})`);
  return found.path;
}

export function openPort(port: SerialPortStream): Promise<void> {
  return new Promise((resolve, reject) => port.open((err) => (err ? reject(err) : resolve())));
}

export function closePort(port: SerialPortStream): Promise<void> {
  return new Promise((resolve) => {
    if (!port.isOpen) return resolve();
    port.close(() => resolve());
  });
}

export function writePort(port: SerialPortStream, line: string): Promise<void> {
  return new Promise((resolve, reject) => {
    port.write(line, (err) => {
      if (err) return reject(err);
      port.drain((e) => (e ? reject(e) : resolve()));
    });
  });
}

/**
 * Resolves true once the port is there (its path exists, or a listed port matches), checking every
 * `everyMs`; false when `signal` aborts first. A replugged USB node is found within one period
 * instead of after a long random backoff.
 */
export async function waitForPort(
  binding: SerialBinding,
  target: { path?: string; match?: UsbMatch },
  everyMs: number,
  signal: AbortSignal,
): Promise<boolean> {
  for (;;) {
    if (signal.aborted) return false;
    try {
      const path = await resolvePort(binding, target);
      if ((await binding.identify(path)) !== null) return true;
    } catch {
      // not there yet
    }
    const woke = await new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => {
        signal.removeEventListener("abort", onAbort);
        resolve(true);
      }, everyMs);
      const onAbort = (): void => {
        clearTimeout(timer);
        resolve(false);
      };
      signal.addEventListener("abort", onAbort, { once: true });
    });
    if (!woke) return false;
  }
}
