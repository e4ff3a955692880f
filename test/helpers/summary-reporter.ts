// Prints the plain closing line "N passed, N failed" that CI reads, after vitest's own summary.
import type { Reporter, RunnerTestFile, RunnerTask } from "vitest";

function count(tasks: RunnerTask[], acc: { passed: number; failed: number; skipped: number }): void {
  for (const task of tasks) {
    if (task.type === "suite") count(task.tasks, acc);
    else if (task.result?.state === "pass") acc.passed++;
    else if (task.result?.state === "fail") acc.failed++;
    else acc.skipped++;
  }
}

export default class SummaryReporter implements Reporter {
  onFinished(files: RunnerTestFile[] = [], errors: unknown[] = []): void {
    const acc = { passed: 0, failed: 0, skipped: 0 };
    count(files, acc);
    // A file that failed to load counts as a failure even though it has no tasks.
    for (const file of files) if (file.result?.state === "fail" && file.tasks.length === 0) acc.failed++;
    acc.failed += errors.length;
    process.stdout.write(`\n${acc.passed} passed, ${acc.failed} failed${acc.skipped ? `, ${acc.skipped} skipped` : ""}\n`);
  }
}
