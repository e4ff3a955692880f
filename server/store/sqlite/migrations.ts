/**
 * Versioned schema migrations, applied in order, each once, inside a transaction. A migration is
 * never edited after it has shipped: add a new one, after the last. Names are unique and recorded in
 * `schema_migrations`. This file holds the first schema (001 to 040); 050 to 090 are in
 * migrations-shared.ts and come after them in MIGRATIONS.
 */
import { SHARED_MIGRATIONS } from "./migrations-shared.js";

export interface Migration {
  name: string;
  sql: string;
}

export const MIGRATIONS: Migration[] = [
  {
    name: "001-core",
    sql: `
CREATE TABLE users (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  password_hash TEXT,
  created INTEGER NOT NULL
);
CREATE TABLE tokens (
  hash TEXT PRIMARY KEY,
  kind TEXT NOT NULL,
  user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  node_id TEXT,
  client_id TEXT,
  created INTEGER NOT NULL
);
CREATE INDEX tokens_user ON tokens(user_id, kind);
CREATE INDEX tokens_node ON tokens(node_id);
CREATE TABLE blocks (
  node_id TEXT PRIMARY KEY,
  user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  short_name TEXT NOT NULL,
  date_created INTEGER NOT NULL,
  last_active INTEGER NOT NULL,
  token_pending_until INTEGER
);
CREATE INDEX blocks_user ON blocks(user_id);
CREATE TABLE devices (
  id INTEGER PRIMARY KEY,
  guid TEXT NOT NULL UNIQUE,
  user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  node_id TEXT NOT NULL,
  g TEXT NOT NULL,
  v INTEGER NOT NULL,
  d INTEGER NOT NULL,
  short_name TEXT,
  is_silent INTEGER NOT NULL DEFAULT 0,
  meta TEXT NOT NULL DEFAULT '{}',
  last_da TEXT,
  last_ts INTEGER,
  created INTEGER NOT NULL
);
CREATE INDEX devices_user ON devices(user_id);
CREATE INDEX devices_node ON devices(node_id);
CREATE TABLE readings (
  device_id INTEGER NOT NULL,
  ts INTEGER NOT NULL,
  num REAL,
  da TEXT NOT NULL
);
CREATE INDEX readings_device_ts ON readings(device_id, ts, num);
CREATE TABLE event_keys (
  node_id TEXT NOT NULL,
  key TEXT NOT NULL,
  ts INTEGER NOT NULL,
  PRIMARY KEY (node_id, key)
) WITHOUT ROWID;
CREATE INDEX event_keys_ts ON event_keys(ts);
CREATE TABLE commands (
  id INTEGER PRIMARY KEY,
  node_id TEXT NOT NULL,
  guid TEXT NOT NULL,
  g TEXT NOT NULL,
  v INTEGER NOT NULL,
  d INTEGER NOT NULL,
  da TEXT NOT NULL,
  created INTEGER NOT NULL,
  expires INTEGER NOT NULL
);
CREATE INDEX commands_node ON commands(node_id, id);
CREATE TABLE callbacks (
  device_id INTEGER PRIMARY KEY REFERENCES devices(id) ON DELETE CASCADE,
  url TEXT NOT NULL,
  secret TEXT NOT NULL,
  created INTEGER NOT NULL
);
`,
  },
  {
    name: "010-automation",
    sql: `
CREATE TABLE subdevices (
  id INTEGER PRIMARY KEY,
  device_id INTEGER NOT NULL REFERENCES devices(id) ON DELETE CASCADE,
  sid TEXT NOT NULL,
  category TEXT NOT NULL,
  type TEXT NOT NULL,
  short_name TEXT NOT NULL,
  data TEXT NOT NULL DEFAULT '',
  url TEXT,
  token_hash TEXT,
  created INTEGER NOT NULL,
  UNIQUE (device_id, sid)
);
CREATE INDEX subdevices_match ON subdevices(device_id, category, type, data);
CREATE TABLE subdevice_actuations (
  subdevice_id INTEGER NOT NULL REFERENCES subdevices(id) ON DELETE CASCADE,
  ts INTEGER NOT NULL
);
CREATE INDEX subdevice_actuations_ts ON subdevice_actuations(subdevice_id, ts);
CREATE TABLE rules (
  id INTEGER PRIMARY KEY,
  user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  short_name TEXT NOT NULL,
  preconditions TEXT NOT NULL,
  actions TEXT NOT NULL,
  timeout REAL NOT NULL DEFAULT 0,
  suspended INTEGER NOT NULL DEFAULT 0,
  created INTEGER NOT NULL
);
CREATE INDEX rules_user ON rules(user_id);
CREATE TABLE rule_runs (
  id INTEGER PRIMARY KEY,
  rule_id INTEGER NOT NULL REFERENCES rules(id) ON DELETE CASCADE,
  ts INTEGER NOT NULL,
  ok INTEGER NOT NULL,
  steps TEXT NOT NULL,
  error TEXT
);
CREATE INDEX rule_runs_rule ON rule_runs(rule_id, id);
CREATE TABLE camera_snapshots (
  device_id INTEGER PRIMARY KEY REFERENCES devices(id) ON DELETE CASCADE,
  seq INTEGER NOT NULL,
  content_type TEXT NOT NULL,
  body BLOB NOT NULL,
  created INTEGER NOT NULL
);
`,
  },
];

// Accounts on the web: browser sessions, OAuth applications and codes, server keys.
MIGRATIONS.push({
  name: "020-accounts-web",
  sql: `
CREATE TABLE sessions (
  hash TEXT PRIMARY KEY,
  user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  created INTEGER NOT NULL,
  expires INTEGER NOT NULL
);
CREATE INDEX sessions_user ON sessions(user_id);
CREATE INDEX sessions_expires ON sessions(expires);
CREATE TABLE oauth_apps (
  client_id TEXT PRIMARY KEY,
  user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  redirect_uri TEXT NOT NULL,
  secret_hash TEXT NOT NULL,
  created INTEGER NOT NULL
);
CREATE INDEX oauth_apps_user ON oauth_apps(user_id);
CREATE TABLE oauth_codes (
  hash TEXT PRIMARY KEY,
  client_id TEXT NOT NULL REFERENCES oauth_apps(client_id) ON DELETE CASCADE,
  user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  redirect_uri TEXT NOT NULL,
  expires INTEGER NOT NULL,
  used INTEGER NOT NULL DEFAULT 0,
  token_hash TEXT
);
CREATE INDEX oauth_codes_expires ON oauth_codes(expires);
CREATE TABLE server_keys (
  name TEXT PRIMARY KEY,
  value TEXT NOT NULL,
  created INTEGER NOT NULL
);
`,
});

// The ingest path appends readings to an unindexed staging table; the store moves them into
// `readings` in bulk, sorted by device (staging.ts), so that one commit does not dirty one index
// page per device.
MIGRATIONS.push({
  name: "030-readings-staging",
  sql: `
CREATE TABLE readings_staged (
  id INTEGER PRIMARY KEY,
  device_id INTEGER NOT NULL,
  ts INTEGER NOT NULL,
  num REAL,
  da TEXT NOT NULL
);
`,
});

// Rule ids are never reused (SQLite reuses the largest rowid after a delete): a deleted rule's rid
// must not name another rule later, and a run recorded just after a deletion must not land in the
// history of a new rule with the same id.
MIGRATIONS.push({
  name: "040-rule-ids",
  sql: `
CREATE TABLE sequences (
  name TEXT PRIMARY KEY,
  value INTEGER NOT NULL
);
INSERT INTO sequences (name, value) SELECT 'rules', coalesce(max(id), 0) FROM rules;
CREATE TRIGGER rules_sequence AFTER INSERT ON rules
BEGIN
  UPDATE sequences SET value = max(value, NEW.id) WHERE name = 'rules';
END;
`,
});

// 050 to 090, in migrations-shared.ts: what several processes share and the work that outlives one.
MIGRATIONS.push(...SHARED_MIGRATIONS);
