/** `blockkit openapi`: the API reference (OpenAPI 3.1, JSON), as committed in docs/openapi.json. */
import { readFileSync, writeFileSync } from "node:fs";
import type { Command } from "commander";

interface OpenapiFlags {
  out?: string;
  check?: string;
}

export function registerOpenapi(program: Command): void {
  program
    .command("openapi")
    .description("print the API reference (OpenAPI 3.1 JSON) generated from the server's routes, or write it to a file")
    .option("--out <file>", "write it to this file (docs/openapi.json in the repository) instead of stdout")
    .option("--check <file>", "exit 1 when this file differs from the generated reference")
    .action(async (flags: OpenapiFlags) => {
      // Loaded on use, so that `blockkit gateway` on a Pi does not carry the server's modules.
      const { referenceText, REFERENCE_COMMAND } = await import("../server/reference.js");
      const text = await referenceText();
      if (flags.check !== undefined) {
        let committed = "";
        try {
          committed = readFileSync(flags.check, "utf8");
        } catch {
          // A missing file differs.
        }
        if (committed !== text) throw new Error(`${flags.check} is not the generated reference: run ${REFERENCE_COMMAND} and commit it`);
        return;
      }
      if (flags.out !== undefined) writeFileSync(flags.out, text);
      else process.stdout.write(text);
    });
}
