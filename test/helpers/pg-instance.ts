/**
 * A throwaway PostgreSQL server of a test's own (initdb into a temporary directory, pg_ctl), for
 * tests that stop and start PostgreSQL: never the shared local cluster, which other test runs use.
 * It listens on a unix socket in its own directory and on no TCP port: PostgreSQL cannot take port 0
 * (its `port` runs from 1), and a port picked free beforehand could be taken by another test before
 * PostgreSQL binds it, or while it is stopped between a test's stop() and start(). The socket's
 * directory is this instance's alone, so nothing can take its place. As root, initdb and pg_ctl
 * run as the `postgres` user (initdb refuses root). Where the binaries are missing the tests that
 * need one are left out with a visible message, unless BLOCKKIT_REQUIRE_PG=1 (CI), where that is an
 * error.
 */
import { execFile } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

function findBin(): string | null {
  const root = "/usr/lib/postgresql";
  if (!existsSync(root)) return null;
  const versions = readdirSync(root).sort((a, b) => Number(b) - Number(a));
  for (const v of versions) if (existsSync(join(root, v, "bin", "initdb")) && existsSync(join(root, v, "bin", "pg_ctl"))) return join(root, v, "bin");
  return null;
}

const BIN = process.env.BLOCKKIT_PG_BIN ?? findBin();
const AS_ROOT = userInfo().uid === 0;
const RUNUSER = "/usr/sbin/runuser";

function missing(): string | null {
  if (BIN === null) return "no PostgreSQL server binaries (/usr/lib/postgresql/*/bin/initdb; set BLOCKKIT_PG_BIN)";
  if (AS_ROOT && !existsSync(RUNUSER)) return `running as root without ${RUNUSER} to run initdb as postgres`;
  return null;
}

const problem = missing();
if (problem !== null) {
  if (process.env.BLOCKKIT_REQUIRE_PG === "1") throw new Error(`${problem}, and BLOCKKIT_REQUIRE_PG=1`);
  process.stderr.write(`\n!!! ${problem}: the tests that restart their own PostgreSQL are SKIPPED (set BLOCKKIT_REQUIRE_PG=1 to fail instead)\n\n`);
}

/** True when a throwaway PostgreSQL can be made here. */
export const PG_BINARIES = problem === null;

export interface PgInstance {
  /** postgres://postgres@localhost/postgres?host=DIR: the unix socket in DIR (node-postgres, libpq). */
  url: string;
  /** The directory of its unix socket (`.s.PGSQL.5432`). */
  socketDir: string;
  /** Stops the server; `immediate` is a crash (no checkpoint), `fast` a clean shutdown. */
  stop(mode?: "fast" | "immediate"): Promise<void>;
  /** Starts it again on the same socket and directory. */
  start(): Promise<void>;
  /** Stops it (if running) and removes its directory. */
  dispose(): Promise<void>;
}

async function as(bin: string, args: string[]): Promise<void> {
  const exe = join(BIN as string, bin);
  if (AS_ROOT) await run(RUNUSER, ["-u", "postgres", "--", exe, ...args], { timeout: 60_000 });
  else await run(exe, args, { timeout: 60_000 });
}

/** initdb (trust, no fsync at init) and start, on a unix socket in its own directory only. */
export async function startPgInstance(): Promise<PgInstance> {
  const dir = mkdtempSync(join(tmpdir(), "blockkit-pg-"));
  const data = join(dir, "data");
  if (AS_ROOT) {
    const { stdout } = await run("id", ["-u", "postgres"]);
    const { stdout: gid } = await run("id", ["-g", "postgres"]);
    chownSync(dir, Number(stdout.trim()), Number(gid.trim()));
  }
  await as("initdb", ["-D", data, "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8", "--locale", "C"]);
  // No TCP listener (listen_addresses empty); the port only names the socket file.
  const options = `-p 5432 -c listen_addresses= -c unix_socket_directories=${dir} -c max_connections=60 -c shared_buffers=16MB`;
  let running = false;
  const inst: PgInstance = {
    url: `postgres://postgres@localhost/postgres?host=${encodeURIComponent(dir)}`,
    socketDir: dir,
    async start() {
      await as("pg_ctl", ["-D", data, "-o", options, "-l", join(dir, "log"), "-w", "-t", "30", "start"]);
      running = true;
    },
    async stop(mode = "fast") {
      await as("pg_ctl", ["-D", data, "-m", mode, "-w", "-t", "30", "stop"]);
      running = false;
    },
    async dispose() {
      if (running) await inst.stop("immediate").catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    },
  };
  try {
    await inst.start();
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  return inst;
}
