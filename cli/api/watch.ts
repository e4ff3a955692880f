/** `blockkit watch [GUID…]`: one line per event of the live stream (or one JSON object per line), until Ctrl-C. */
import type { Command } from "commander";
import { stringify } from "yaml";
import { type StreamFrame, streamAddress } from "../../protocol/stream.js";
import { CliError } from "../errors.js";
import { guid } from "./args.js";
import { type CliIO, apiAction, apiOptions, shortWhen } from "./context.js";
import { StreamFollower } from "./stream-follower.js";

/** The server's root ({auth_url}) of a --server that may be the REST root. */
export function authUrl(server: string): string {
  return server.replace(/\/+$/, "").replace(/\/rest\/v\d+$/, "");
}

/** One readable line: time, kind, subject, what happened. */
export function frameLine(f: StreamFrame, now: () => number = Date.now): string {
  const at = (ms?: number): string => shortWhen(ms ?? now());
  switch (f.type) {
    case "data":
      return `${at(f.timestamp)}  data    ${f.guid}  ${String(f.DA)}${f.truncated ? " …" : ""}`;
    case "config":
      return `${at(f.timestamp)}  config  ${f.guid}  ${typeof f.config.type === "string" ? f.config.type : JSON.stringify(f.config)}`;
    case "device":
      return `${at()}  device  ${f.guid}  ${f.change}`;
    case "block":
      return `${at()}  block   ${f.nodeId}  ${f.change}`;
    case "rule":
      return `${at(f.timestamp)}  rule    ${f.rid}  ${f.ok ? "ran" : "failed"}`;
    case "lag":
      return `${at()}  lag     ${f.dropped} events dropped (this terminal was too slow)`;
  }
}

export function registerWatch(program: Command, io: CliIO): void {
  apiOptions(
    program
      .command("watch")
      .description("follow the live stream: one line per reading, config, device, block or rule event, until Ctrl-C")
      .argument("[guids...]", "only these devices (data, config and device events)", (v: string, prev: string[] = []) => [...prev, guid(v)]),
  ).action(
    apiAction(io, async (ctx, guids: string[] | undefined) => {
      if (!io.onInterrupt) throw new CliError("watch needs a terminal to stop it", 1);
      const onInterrupt = io.onInterrupt;
      const write = (f: StreamFrame): void => {
        if (ctx.output === "json") io.stdout(`${JSON.stringify(f)}\n`);
        else if (ctx.output === "yaml") io.stdout(`---\n${stringify(f)}`);
        else io.stdout(`${frameLine(f)}\n`);
      };
      await new Promise<void>((resolve, reject) => {
        const follower = new StreamFollower({
          url: streamAddress(authUrl(ctx.target.server), { userToken: ctx.target.token, guids }),
          onFrame: write,
          onStatus: (line) => io.stderr(`blockkit watch: ${line}\n`),
          onFatal: (err) => {
            off();
            reject(new CliError(err.message, 1));
          },
        });
        const off = onInterrupt(() => {
          off();
          follower.stop().then(resolve, reject);
        });
        follower.start();
      });
    }),
  );
}
