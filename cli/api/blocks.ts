/** `blockkit blocks` (list), `blocks claim|show|rm NODEID`. */
import type { Command } from "commander";
import type { BlockJson } from "../../protocol/api-types.js";
import { writeCache } from "../config.js";
import { nodeId } from "./args.js";
import { type CliIO, apiAction, apiOptions, shortWhen, table } from "./context.js";

function blockRow(id: string, b: BlockJson): string[] {
  return [id, b.short_name || "-", shortWhen(b.date_created), shortWhen(b.last_active)];
}

export function registerBlocks(program: Command, io: CliIO): void {
  const blocks = apiOptions(program.command("blocks").description("list your blocks; claim, show or unpair one"));
  blocks.action(
    apiAction(io, async (ctx) => {
      const all = await ctx.client.blocks();
      writeCache(io.env, "nodeids", Object.keys(all).sort());
      ctx.print(all, () => {
        const rows = Object.entries(all)
          .sort(([a], [b]) => a.localeCompare(b))
          .map(([id, b]) => blockRow(id, b));
        return rows.length === 0 ? ["(no blocks)"] : table(["NODEID", "NAME", "CREATED", "LAST ACTIVE"], rows);
      });
    }),
  );
  blocks
    .command("claim")
    .description("claim a block that is awaiting activation (it then receives its token)")
    .argument("<nodeid>", "the block's node id", nodeId)
    .action(
      apiAction(io, async (ctx, id: string) => {
        await ctx.client.claimBlock(id);
        ctx.done(`claimed ${id}`);
      }),
    );
  blocks
    .command("show")
    .description("one block's name, creation and last activity")
    .argument("<nodeid>", "the block's node id", nodeId)
    .action(
      apiAction(io, async (ctx, id: string) => {
        const b = await ctx.client.block(id);
        ctx.print(b, () => table(["NODEID", "NAME", "CREATED", "LAST ACTIVE"], [blockRow(id, b)]));
      }),
    );
  blocks
    .command("rm")
    .description("unpair a block: removes it, its token, its queued commands and its devices with their history")
    .argument("<nodeid>", "the block's node id", nodeId)
    .action(
      apiAction(io, async (ctx, id: string) => {
        await ctx.client.unpairBlock(id);
        ctx.done(`unpaired ${id}`);
      }),
    );
}
