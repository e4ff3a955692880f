/**
 * `npm run bench`: runs every `bench/*.bench.ts` (or those named on the command line) one after
 * another, each in its own process, and prints their figures. Benchmarks print figures; they do not
 * pass or fail.
 */
import { spawnSync } from "node:child_process";
import { readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const wanted = process.argv.slice(2);
// Run only when named: the soak takes 20 minutes and measures growth, not speed.
const ON_REQUEST = ["soak.bench.ts"];
const files = readdirSync(here)
  .filter((f) => f.endsWith(".bench.ts"))
  .filter((f) => (wanted.length === 0 ? !ON_REQUEST.includes(f) : wanted.some((w) => f.includes(w))))
  .sort();
if (files.length === 0) {
  process.stderr.write(`no benchmark matches ${wanted.join(" ")}\n`);
  process.exit(2);
}
// Benchmarks measure the built program, as it runs in production.
const build = spawnSync("npm", ["run", "build"], { stdio: "inherit", cwd: join(here, "..") });
if (build.status !== 0) process.exit(1);
let failed = 0;
for (const f of files) {
  process.stdout.write(`\n=== ${f} ===\n`);
  // The simulator bench runs the fleet in its own process, with the V8 flags that `blockkit sim`
  // gives itself (cli/respawn.ts).
  const flags = f.startsWith("simulator") ? ["--max-semi-space-size=32", "--no-memory-reducer"] : [];
  const r = spawnSync(process.execPath, ["--expose-gc", ...flags, "--import", "tsx", join(here, f)], { stdio: "inherit" });
  if (r.status !== 0) {
    failed++;
    process.stdout.write(`${f} exited with ${r.status ?? r.signal}\n`);
  }
}
process.exit(failed > 0 ? 1 : 0);
