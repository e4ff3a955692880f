/** The gateway's state dir holds the block token: 0700 (a looser one is tightened), outbox.db 0600. */
import { mkdirSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { loadConfig } from "../../gateway/daemon/config.js";
import { Gateway } from "../../gateway/daemon/gateway.js";
import { unreachableServer } from "../helpers/process.js";
import { tempDir } from "./helpers.js";

const dirs: string[] = [];
const unreachable: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const u of unreachable.splice(0)) await u.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

it("tightens a state dir readable by others and creates the outbox 0600", async () => {
  const dir = tempDir("state-modes");
  dirs.push(dir);
  const stateDir = join(dir, "state");
  mkdirSync(stateDir, { mode: 0o755 });
  const server = await unreachableServer();
  unreachable.push(server);
  const config = loadConfig({
    flags: { server: server.url, nodeId: "STATEMODES01", stateDir, healthPort: 0, logLevel: "silent" },
    env: {},
  });
  const gw = new Gateway(config);
  await gw.start();
  await gw.stop();
  const mode = (p: string): string => (statSync(p).mode & 0o777).toString(8);
  expect(mode(stateDir)).toBe("700");
  expect(mode(join(stateDir, "outbox.db"))).toBe("600");
});
