/** `blockkit sim merge REPORT…`: one report and one verdict from the reports of a scenario's shards. */
import { readFileSync } from "node:fs";
import type { Command } from "commander";
import { readsRunOptions } from "./sim-sub.js";

interface MergeFlags {
  report?: string;
}

export function registerMerge(sim: Command): void {
  const merge = sim
    .command("merge <reports...>")
    .description("merge the reports of a scenario's shards (--shard i/n) into one and check the thresholds on the merge")
    .option("--report <file>", "write the merged JSON report to FILE")
    .action(async (files: string[], _local: MergeFlags, command: Command) => {
      // `sim` declares --report too; commander gives it to the parent, so read both.
      const flags = command.optsWithGlobals<MergeFlags>();
      const { MergeError, mergeReports } = await import("../simulator/merge.js");
      const { summaryLines, writeReport } = await import("../simulator/report.js");
      const { parseThreshold } = await import("../simulator/scenario/thresholds.js");
      const reports = files.map((file) => {
        let doc: unknown;
        try {
          doc = JSON.parse(readFileSync(file, "utf8"));
        } catch (err) {
          process.stderr.write(`blockkit sim merge: ${file}: ${(err as Error).message}\n`);
          process.exit(2);
        }
        const r = doc as import("../simulator/report.js").Report;
        if (!r || typeof r !== "object" || !r.scenario || !r.counts || !r.histograms) {
          process.stderr.write(`blockkit sim merge: ${file}: not a report of blockkit sim --report (no scenario, counts or histograms)\n`);
          process.exit(2);
        }
        try {
          // The thresholds as the scenario gave them, parsed again rather than trusted from the file.
          r.scenario = { ...r.scenario, thresholds: r.scenario.thresholds.map((t) => parseThreshold(t.text)) };
        } catch (err) {
          process.stderr.write(`blockkit sim merge: ${file}: ${(err as Error).message}\n`);
          process.exit(2);
        }
        return r;
      });
      let merged;
      try {
        merged = mergeReports(reports);
      } catch (err) {
        if (!(err instanceof MergeError)) throw err;
        process.stderr.write(`blockkit sim merge: ${err.message}\n`);
        process.exit(2);
      }
      if (flags.report) writeReport(flags.report, merged);
      process.stderr.write(`merged ${reports.length} reports: ${merged.parts.map((p) => `part ${p.index}/${p.count} ${p.blocks} blocks`).join(", ")}\n`);
      for (const line of summaryLines(merged)) process.stderr.write(`${line}\n`);
      // A part cut short measured less than the scenario asks: the merge is not a pass (exit 1).
      for (const { index, count, interrupted: i } of merged.parts) {
        if (i !== null) process.stderr.write(`part ${index}/${count} was interrupted (${i.signal})${i.during_start_up ? " during start-up" : ""}: the merge is not a pass\n`);
      }
      process.exit(merged.passed ? 0 : 1);
    });
  readsRunOptions(merge, ["--report"], "it reads reports (give the report files)");
}
