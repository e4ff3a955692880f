/**
 * The options of a sim run that a sub-command of `blockkit sim` reads. Commander gives a parent's
 * options to the parent wherever they stand on the line, so `sim merge --blocks 3` set sim's
 * --blocks and merge went on without it, silently. Each sub-command names the run options it
 * reads; any other one given on the command line is refused (exit 2), and its --help lists only
 * those it reads.
 */
import type { Command, Option } from "commander";
import { CliError } from "./errors.js";

/** The run options each sub-command reads, for its completion too. */
const READS = new WeakMap<Command, readonly string[]>();

/** Whether `cmd` takes `option`, one of an ancestor's: every one, but a sim sub-command only the run options it reads. */
export function takesAncestorOption(cmd: Command, option: Option): boolean {
  const reads = READS.get(cmd);
  return reads === undefined || (option.long !== undefined && reads.includes(option.long));
}

/**
 * Makes `sub` refuse the options of its parent (the sim run) that it does not read. `reads`: the
 * long flags of the run it does read (some it declares itself, which commander still gives to the
 * parent); `does`: what it works on instead, for the message, e.g. "it reads reports (give the
 * report files)".
 */
export function readsRunOptions(sub: Command, reads: readonly string[], does: string): Command {
  const run = sub.parent;
  if (!run) throw new TypeError(`sim ${sub.name()}: register it on sim before naming the run options it reads`);
  READS.set(sub, reads);
  const read = (o: Option): boolean => takesAncestorOption(sub, o);
  sub.hook("preAction", () => {
    // A default (or no value) is not the user's doing; "cli", and "env" or "config" if sim ever
    // takes them, is.
    const given = run.options.filter((o) => {
      const source = run.getOptionValueSource(o.attributeName());
      return source !== undefined && source !== "default" && !read(o);
    });
    if (given.length > 0) throw new CliError(`does not take ${given.map((o) => o.long ?? o.flags).join(", ")}: ${does}`);
  });
  // Its help: its own options, and under "Global Options" the run options it reads and does not
  // declare itself (not every option of a run, nor the program's --version).
  const own = (o: Option): boolean => sub.options.some((s) => s.long === o.long);
  return sub.configureHelp({
    ...sub.configureHelp(),
    showGlobalOptions: true,
    visibleGlobalOptions: () => run.options.filter((o) => !o.hidden && read(o) && !own(o)),
  });
}
