import { availableParallelism } from "node:os";
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts", "test/**/*.test.tsx"],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: "forks",
    // Two files at a time on a 2-core machine (vitest's default there is one): most files wait on
    // child processes and sockets, so the suite took 873 s one at a time and 498 s two at a time
    // (2 × Intel Xeon vCPU, 2026-12-01, both green twice). Where there are more cores, vitest's own
    // default (one less than the cores).
    maxWorkers: Math.max(2, availableParallelism() - 1),
    minWorkers: 1,
    reporters: ["default", "./test/helpers/summary-reporter.ts"],
  },
});
