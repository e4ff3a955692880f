/** `blockkit rules` (list), `rules show|add|update|rm|suspend|resume`. */
import type { Command } from "commander";
import type { RuleBody, RuleHandler, RuleJson, RuleRunJson } from "../../protocol/api-types.js";
import { writeCache } from "../config.js";
import { readDocument, ruleId } from "./args.js";
import { CliError, type CliIO, apiAction, apiOptions, shortWhen, table } from "./context.js";

/** A rule document read from FILE or `-`: checked for the fields the service needs, so that a typo is named here. */
async function ruleDocument(io: CliIO, file: string): Promise<RuleBody> {
  const doc = await readDocument(io, file);
  const where = file === "-" ? "standard input" : file;
  if (typeof doc.shortName !== "string" || doc.shortName === "") throw new CliError(`${where}: "shortName" must be a non-empty string`);
  for (const key of ["preconditions", "actions"] as const) {
    const list = doc[key];
    if (!Array.isArray(list)) throw new CliError(`${where}: "${key}" must be an array of {handler, params}`);
    list.forEach((h: unknown, i) => {
      if (typeof h !== "object" || h === null || typeof (h as RuleHandler).handler !== "string") {
        throw new CliError(`${where}: "${key}[${i}].handler" must be a string`);
      }
    });
  }
  if (doc.timeout !== undefined && (typeof doc.timeout !== "number" || doc.timeout < 0)) {
    throw new CliError(`${where}: "timeout" must be a number of seconds`);
  }
  return doc as unknown as RuleBody;
}

const handlers = (list: RuleHandler[]): string => list.map((h) => h.handler).join(", ") || "-";

/** One run of the rule: when, its outcome, and each step's (or the error that stopped it). */
function runRow(run: RuleRunJson): string[] {
  const steps = run.steps.map((s) => `${s.handler}${s.ok ? "" : "!"} ${s.ms}ms`).join(", ") || "-";
  return [shortWhen(run.timestamp), run.ok ? "ok" : "failed", run.error ?? steps];
}

function ruleLines(r: RuleJson): string[] {
  const fmt = (h: RuleHandler): string => `${h.handler} ${JSON.stringify(h.params ?? {})}`;
  return [
    `rid        ${String(r.rid)}`,
    `name       ${r.shortName}`,
    `suspended  ${r.suspended ? "yes" : "no"}`,
    `timeout    ${r.timeout} s`,
    ...r.preconditions.map((h) => `when       ${fmt(h)}`),
    ...r.actions.map((h) => `do         ${fmt(h)}`),
    "",
    ...(r.history === undefined || r.history.length === 0
      ? ["(no runs yet)"]
      : table(["RAN", "RESULT", "STEPS"], [...r.history].sort((a, b) => b.timestamp - a.timestamp).map(runRow))),
  ];
}

export function registerRules(program: Command, io: CliIO): void {
  const rules = apiOptions(program.command("rules").description("list your rules; show, add, update, remove, suspend or resume one"));
  rules.action(
    apiAction(io, async (ctx) => {
      const all = await ctx.client.rules();
      writeCache(io.env, "rids", all.map((r) => String(r.rid)));
      ctx.print(all, () =>
        all.length === 0
          ? ["(no rules)"]
          : table(
              ["RID", "NAME", "STATE", "WHEN", "DO"],
              all.map((r) => [String(r.rid), r.shortName, r.suspended ? "suspended" : "active", handlers(r.preconditions), handlers(r.actions)]),
            ),
      );
    }),
  );
  rules
    .command("show")
    .description("one rule: its preconditions, its actions and its recent runs")
    .argument("<rid>", "rule id", ruleId)
    .action(
      apiAction(io, async (ctx, rid: string) => {
        const r = await ctx.client.rule(rid);
        ctx.print(r, () => ruleLines(r));
      }),
    );
  rules
    .command("add")
    .description("create a rule from a YAML or JSON document {shortName, preconditions, actions, timeout?}; prints its id")
    .argument("<file>", "the YAML or JSON file, or - for standard input")
    .action(
      apiAction(io, async (ctx, file: string) => {
        const rid = await ctx.client.createRule(await ruleDocument(io, file));
        ctx.print({ rid }, () => [rid]);
      }),
    );
  rules
    .command("update")
    .description("replace a rule with a YAML or JSON document")
    .argument("<rid>", "rule id", ruleId)
    .argument("<file>", "the YAML or JSON file, or - for standard input")
    .action(
      apiAction(io, async (ctx, rid: string, file: string) => {
        await ctx.client.updateRule(rid, await ruleDocument(io, file));
        ctx.done(`updated rule ${rid}`);
      }),
    );
  const simple = [
    ["rm", "remove a rule", "removed", "deleteRule"],
    ["suspend", "stop a rule from firing", "suspended", "suspendRule"],
    ["resume", "let a suspended rule fire again", "resumed", "unsuspendRule"],
  ] as const;
  for (const [name, description, verb, method] of simple) {
    rules
      .command(name)
      .description(description)
      .argument("<rid>", "rule id", ruleId)
      .action(
        apiAction(io, async (ctx, rid: string) => {
          await ctx.client[method](rid);
          ctx.done(`${verb} rule ${rid}`);
        }),
      );
  }
}
