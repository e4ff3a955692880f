/**
 * The SQLite store's migrations 050 to 090 (migrations.ts applies them after its own, in order):
 * what several processes on one store share (blocks awaiting activation, when a rule last fired,
 * the log of deleted tokens) and the work that must outlive the process (rule evaluations and
 * jobs, the callback outbox), each following the PostgreSQL store's tables. Apart from the first
 * schema (users to rule ids) so that each file reads as one part of the store's history. Shipped
 * migrations are never edited: a new one comes after the last.
 */
import type { Migration } from "./migrations.js";

export const SHARED_MIGRATIONS: Migration[] = [];

// Blocks awaiting activation, for every process that shares the store (the PostgreSQL store's
// instances; the embedded store keeps the same table so that both implement one interface).
SHARED_MIGRATIONS.push({
  name: "050-activation-waits",
  sql: `
CREATE TABLE activation_waits (
  node_id TEXT PRIMARY KEY,
  until INTEGER NOT NULL
);
`,
});

// When each rule last fired, for the instances that share a store (the firing of a rule job in rule-evals.ts checks and sets it in the transaction that fires).
SHARED_MIGRATIONS.push({
  name: "060-rule-last-fired",
  sql: "ALTER TABLE rules ADD COLUMN last_fired INTEGER;",
});

// Every deleted token, whichever process deleted it (a trigger, so that \`blockkit users token\` run
// beside the server counts too): the server's token cache reads the new entries every second and
// drops those hashes (TokensRepo.revokedSince). Entries older than an hour are pruned.
SHARED_MIGRATIONS.push({
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
SHARED_MIGRATIONS.push({
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
SHARED_MIGRATIONS.push({
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
