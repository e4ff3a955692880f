/**
 * `blockkit users add|passwd|token NAME`: manage accounts on the store directly (the server may be
 * running or not). They refuse a directory without a blockkit database unless `--create` is given
 * (`users add` only), so a typo in `--data` does not make a new database whose token the running
 * server rejects. Passwords need at least 8 characters. They never migrate the store: one whose
 * schema is not this build's is refused (store-open.ts).
 */
import type { Command } from "commander";
import { dbUrl, storeLocation, userName } from "./options.js";
import { openCommandStore } from "./store-open.js";

interface StoreFlags {
  data: string;
  db?: string;
  create?: boolean;
}

const storeOptions = (c: Command): Command =>
  c
    .option("--data <dir>", "directory of the embedded SQLite store", "./data")
    .option("--db <url>", "store URL: sqlite:DIR, a directory or postgres://… (default: BLOCKKIT_DB, else --data)", dbUrl);

async function withAccounts<T>(flags: StoreFlags, run: (a: { store: import("../server/store/types.js").Store; auth: import("../server/services/auth.js").AuthService }) => Promise<T>): Promise<T> {
  const { AuthService } = await import("../server/services/auth.js");
  const store = await openCommandStore(storeLocation(flags).url, flags.create === true);
  try {
    return await run({ store, auth: new AuthService(store) });
  } finally {
    await store.close();
  }
}

/** The password from --password, else the first line of standard input. */
async function passwordFrom(flag: string | undefined): Promise<string> {
  if (flag !== undefined) return flag;
  if (process.stdin.isTTY) throw new Error("give the new password with --password, or on standard input");
  let text = "";
  for await (const chunk of process.stdin) text += String(chunk);
  return text.split(/\r?\n/)[0] ?? "";
}

export function registerUsers(program: Command): void {
  const users = program.command("users").description("manage accounts (on the store directly)");
  storeOptions(
    users
      .command("add <name>")
      .description("create a user; prints the new user's access token alone")
      .option("--password <password>", "password for the settings pages (at least 8 characters)")
      .option("--create", "create the database when the directory has none"),
  ).action(async (name: string, flags: StoreFlags & { password?: string }) => {
    userName(name);
    const token = await withAccounts(flags, async ({ store, auth }) => {
      if (await store.users.byName(name)) throw new Error(`user "${name}" already exists`);
      return (await auth.createUser(name, { password: flags.password })).token;
    });
    process.stdout.write(`${token}\n`);
  });
  storeOptions(
    users
      .command("passwd <name>")
      .description("set a user's password (from --password, or the first line of standard input)")
      .option("--password <password>", "the new password (at least 8 characters)"),
  ).action(async (name: string, flags: StoreFlags & { password?: string }) => {
    userName(name);
    const password = await passwordFrom(flags.password);
    await withAccounts(flags, async ({ store, auth }) => {
      const user = await store.users.byName(name);
      if (!user) throw new Error(`no user "${name}"`);
      await auth.setPassword(user.id, password);
    });
    process.stderr.write(`blockkit: password of "${name}" set\n`);
  });
  storeOptions(
    users.command("token <name>").description("issue a new personal access token (the old one stops working); prints it alone"),
  ).action(async (name: string, flags: StoreFlags) => {
    userName(name);
    const token = await withAccounts(flags, async ({ store, auth }) => {
      const user = await store.users.byName(name);
      if (!user) throw new Error(`no user "${name}"`);
      return auth.issue(user.id, "user");
    });
    process.stdout.write(`${token}\n`);
  });
}
