/** `blockkit camera snapshot GUID --out FILE`: asks the camera's block for a picture and saves it. */
import { writeFile } from "node:fs/promises";
import type { Command } from "commander";
import { url } from "../options.js";
import { guid } from "./args.js";
import { CliError, type CliIO, apiAction, apiOptions } from "./context.js";

export function registerCamera(program: Command, io: CliIO): void {
  const camera = apiOptions(program.command("camera").description("camera snapshots"));
  camera
    .command("snapshot")
    .description("take a snapshot (the block uploads it) and write the JPEG to --out")
    .argument("<guid>", "camera device GUID", guid)
    .requiredOption("--out <file>", "where to write the JPEG")
    .option("--stream <url>", "the server's stream_url (default: the server's port + 1)", url)
    .action(
      apiAction(io, async (ctx, id: string, flags: { out: string }) => {
        const jpeg = await ctx.client.snapshot(id);
        try {
          await writeFile(flags.out, jpeg);
        } catch (err) {
          throw new CliError(`cannot write --out ${flags.out}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, 1);
        }
        ctx.print({ file: flags.out, bytes: jpeg.length }, () => [`wrote ${jpeg.length} bytes to ${flags.out}`]);
      }),
    );
}
