/** One server per test file, shared by its tests: each test makes its own users and clients. */
import { hashPassword } from "../../../server/services/secrets.js";
import { type TestServer, startTestServer } from "../../helpers/server.js";
import { PageClient } from "./page-client.js";

export const PASSWORD = "correct horse battery";

export interface Fixture {
  t: TestServer;
  /** The fake clock's time; tests move it forward. */
  now: number;
  /** A new user with PASSWORD and a personal token; a new client (own address) for them. */
  user(prefix?: string): Promise<{ name: string; id: number; token: string; client: PageClient }>;
  /** A new client with its own address. */
  client(): PageClient;
  close(): Promise<void>;
}

export async function fixture(): Promise<Fixture> {
  const f = { now: Date.UTC(2026, 0, 1) } as Fixture;
  const t = await startTestServer({ clock: () => f.now });
  const hash = await hashPassword(PASSWORD);
  let n = 0;
  f.t = t;
  f.client = () => {
    n += 1;
    return new PageClient(t.server.api, `10.0.${Math.floor(n / 250)}.${(n % 250) + 1}`);
  };
  f.user = async (prefix = "user") => {
    n += 1;
    const { store, auth } = t.server.services;
    const row = await store.users.create(`${prefix}${n}`, hash, f.now);
    const token = await auth.issue(row.id, "user");
    return { name: row.name, id: row.id, token, client: f.client() };
  };
  f.close = () => t.close();
  return f;
}
