/** The command line's own refusals: a usage error exits 2, other failures carry their own code. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode = 2,
    /** Point at the command's --help after the message (a usage error; not a refusal of the store). */
    readonly showHelp = exitCode === 2,
  ) {
    super(message);
    this.name = "CliError";
  }
}
