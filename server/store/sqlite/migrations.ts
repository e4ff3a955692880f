/**
 * Versioned schema migrations, applied in order, each once, inside a transaction. A migration is
 * never edited after it has shipped: add a new one. Names are unique and recorded in
 * `schema_migrations`.
 */
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

// Blocks awaiting activation, for every process that shares the store (the PostgreSQL store's
// instances; the embedded store keeps the same table so that both implement one interface).
MIGRATIONS.push({
  name: "050-activation-waits",
  sql: `
CREATE TABLE activation_waits (
  node_id TEXT PRIMARY KEY,
  until INTEGER NOT NULL
);
`,
});

// When each rule last fired, for the instances that share a store (the firing of a rule job in rule-evals.ts checks and sets it in the transaction that fires).
MIGRATIONS.push({
  name: "060-rule-last-fired",
  sql: "ALTER TABLE rules ADD COLUMN last_fired INTEGER;",
});

// Every deleted token, whichever process deleted it (a trigger, so that \`blockkit users token\` run
// beside the server counts too): the server's token cache reads the new entries every second and
// drops those hashes (TokensRepo.revokedSince). Entries older than an hour are pruned.
MIGRATIONS.push({
  name: "070-token-revocations",
  sql: `
CREATE TABLE token_revocations (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  hash TEXT NOT NULL,
  at INTEGER NOT NULL
);
CREATE TRIGGER tokens_revoked AFTER DELETE ON tokens
BEGIN
  INSERT INTO token_revocations (hash, at) VALUES (OLD.hash, CAST(strftime('%s', 'now') AS INTEGER));
END;
`,
});

// Work derived from a committed event that must outlive the process (as on PostgreSQL, whose
// migrations 003 and 004 these tables follow): the evaluations of watched readings, written by the
// ingest transaction (devices.ts), and rule runs in progress (rules/jobs.ts). The one process of the
// embedded store owns every row; a row of another lease is a dead process's (rule-evals.ts).
MIGRATIONS.push({
  name: "080-rule-evals-and-jobs",
  sql: `
CREATE TABLE rule_evals (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  device_id INTEGER NOT NULL,
  user_id INTEGER NOT NULL,
  guid TEXT NOT NULL,
  ts INTEGER NOT NULL,
  da TEXT NOT NULL,
  prev TEXT,
  cause TEXT NOT NULL DEFAULT '',
  lease TEXT,
  lease_until INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX rule_evals_device ON rule_evals(device_id, id);
CREATE TABLE rule_jobs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  rule_id INTEGER NOT NULL REFERENCES rules(id) ON DELETE CASCADE,
  fired_at INTEGER NOT NULL,
  cause TEXT NOT NULL DEFAULT '',
  step INTEGER NOT NULL DEFAULT 0,
  steps TEXT NOT NULL DEFAULT '[]',
  sleep_until INTEGER,
  lease TEXT NOT NULL,
  lease_until INTEGER NOT NULL
);
CREATE INDEX rule_jobs_rule ON rule_jobs(rule_id, id);
`,
});

// Callback deliveries waiting, written by the ingest transaction of their event (devices.ts) for a
// device with a callback, so that an acknowledged event's delivery outlives the process (as on
// PostgreSQL, migration 003); leased by the callback dispatcher (outbox.ts). A deleted callback
// (or its device) takes its deliveries with it. The delivery id is made here, once, so that every
// attempt of a delivery, after a restart too, carries the same X-Blockkit-Delivery.
MIGRATIONS.push({
  name: "090-callback-outbox",
  sql: `
CREATE TABLE callback_outbox (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  delivery TEXT NOT NULL DEFAULT (lower(
    hex(randomblob(4)) || '-' || hex(randomblob(2)) || '-4' || substr(hex(randomblob(2)), 2) || '-' ||
    substr('89ab', 1 + (abs(random()) % 4), 1) || substr(hex(randomblob(2)), 2) || '-' || hex(randomblob(6)))),
  device_id INTEGER NOT NULL REFERENCES callbacks(device_id) ON DELETE CASCADE,
  user_id INTEGER NOT NULL,
  ts INTEGER NOT NULL,
  da TEXT NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  next_at INTEGER NOT NULL,
  lease TEXT,
  lease_until INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX callback_outbox_device ON callback_outbox(device_id, id);
`,
});
