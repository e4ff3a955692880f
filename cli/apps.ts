/** `blockkit apps add`: register an OAuth application for a user (scripts and tests); never migrates the store (store-open.ts). */
import type { Command } from "commander";
import { dbUrl, storeLocation, userName } from "./options.js";
import { openCommandStore } from "./store-open.js";

interface AppsAddFlags {
  user: string;
  name: string;
  redirectUri: string;
  data: string;
  db?: string;
}

export function registerApps(program: Command): void {
  const apps = program.command("apps").description("manage OAuth applications");
  apps
    .command("add")
    .description('register an OAuth application; prints {"client_id":…,"client_secret":…} (the secret is shown only here)')
    .requiredOption("--user <name>", "the user who owns the application", userName)
    .requiredOption("--name <app>", "the application's name, shown on the consent page")
    .requiredOption("--redirect-uri <uri>", "the exact redirect URI the application will use (http or https)")
    .option("--data <dir>", "directory of the embedded SQLite store", "./data")
    .option("--db <url>", "store URL: sqlite:DIR, a directory or postgres://… (default: BLOCKKIT_DB, else --data)", dbUrl)
    .action(async (flags: AppsAddFlags) => {
      // Loaded on use, so that `blockkit gateway` on a Pi does not carry the server's modules.
      const { AuthService } = await import("../server/services/auth.js");
      const { OAuthService } = await import("../server/services/accounts/oauth.js");
      // A typo in --data must not make a new database (which would then have no such user anyway).
      const store = await openCommandStore(storeLocation(flags).url, false).catch((err: unknown) => {
        const missing = err instanceof Error && (err.name === "DataDirError" || err.name === "SchemaError");
        if (missing) throw new Error(err.message.replace(/, or pass --create to start a new database there\)$/, ": an application needs an existing user)"));
        throw err;
      });
      try {
        const user = await store.users.byName(flags.user);
        if (!user) throw new Error(`no user "${flags.user}": create it with blockkit users add`);
        const oauth = new OAuthService(store, new AuthService(store), Date.now);
        const app = await oauth.createApp(user.id, flags.name, flags.redirectUri);
        process.stdout.write(`${JSON.stringify({ client_id: app.client_id, client_secret: app.client_secret })}\n`);
      } finally {
        await store.close();
      }
    });
}
