/**
 * Builds what the firmware tests run: the firmware (firmware/Makefile) and the simavr runner
 * (test/firmware/runner). make rebuilds only what changed; a file lock keeps two test files that
 * start at once from building the same files together. A missing toolchain is an error, never a
 * skip: `npm run firmware` installs it (CI's .ci/run does the same).
 */
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ROOT } from "../helpers/process.js";

export const FIRMWARE_ELF = join(ROOT, "firmware", "build", "blockkit-node.elf");
export const RUNNER = join(ROOT, "test", "firmware", "runner", "build", "avr-runner");

const NEEDED: [string, string][] = [
  ["/usr/bin/avr-gcc", "gcc-avr"],
  ["/usr/lib/avr/include/avr/io.h", "avr-libc"],
  ["/usr/share/arduino/hardware/arduino/avr/cores/arduino/Arduino.h", "arduino-core-avr"],
  ["/usr/include/simavr/sim_avr.h", "libsimavr-dev"],
  ["/usr/lib/x86_64-linux-gnu/libelf.so", "libelf-dev"],
];

function missingPackages(): string[] {
  return NEEDED.filter(([file]) => !existsSync(file) && !existsSync(file.replace("x86_64-linux-gnu", "aarch64-linux-gnu"))).map(
    ([, pkg]) => pkg,
  );
}

function run(cmd: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const p = spawn(cmd, args, { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    p.stdout.on("data", (c: Buffer) => (out += c.toString()));
    p.stderr.on("data", (c: Buffer) => (out += c.toString()));
    p.once("error", reject);
    p.once("exit", (code) => (code === 0 ? resolve() : reject(new Error(`${cmd} ${args.join(" ")} failed (${code}):\n${out}`))));
  });
}

let built: Promise<void> | null = null;

/** Builds the firmware and the runner once per test file. */
export function buildFirmwareAndRunner(): Promise<void> {
  built ??= (async () => {
    const missing = missingPackages();
    if (missing.length > 0) {
      throw new Error(
        `the firmware tests need the AVR toolchain and simavr (missing: ${missing.join(", ")}); ` +
          "`npm run firmware` installs them (gcc-avr avr-libc arduino-core-avr simavr libsimavr-dev libsimavrparts1 libelf-dev)",
      );
    }
    const lock = join(tmpdir(), "blockkit-firmware-build.lock");
    await run("flock", [lock, "make", "-s", "-C", "firmware", join("build", "blockkit-node.hex")]);
    await run("flock", [lock, "make", "-s", "-C", join("test", "firmware", "runner")]);
  })();
  return built;
}
