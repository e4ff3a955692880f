/**
 * How a link hands readings over to a BlockAgent: the agent's lower layer (BlockAgent in agent.ts
 * extends it and makes the outbox, router and uplink it reads). One concern: a reading in, checked,
 * keyed and stored or sent.
 *
 * - `submit(reading, link?)` / `submitMany(readings, link?)`: each reading is stored in the outbox
 *   (fresh idempotency KEY, its time) before the call returns, and leaves it only once the server
 *   acknowledged it; an invalid one is counted and logged, never thrown. `store()` also says when
 *   the outbox refused them (disk full): the link must not ack them.
 * - `submitLean(reading)`: the simulator's lean path (BlockAgentOptions.lean): a lone reading the
 *   uplink would send alone at once is sent without being stored (Uplink.sendLean).
 */
import { randomBytes } from "node:crypto";
import { EventEmitter } from "node:events";
import type { Logger } from "pino";
import { isPort } from "../../protocol/guid.js";
import { MAX_DA_LENGTH, MIN_TIMESTAMP } from "../../protocol/payloads.js";
import type { BlockAgentOptions } from "./agent.js";
import type { RefusalLog } from "./refusals.js";
import type { CommandRouter } from "./router.js";
import type { NewOutboxEntry, Outbox, Reading } from "./types.js";
import type { Uplink } from "./uplink.js";

export abstract class AgentInput extends EventEmitter {
  protected abstract readonly o: BlockAgentOptions;
  protected abstract readonly log: Logger;
  protected abstract readonly clock: () => number;
  protected abstract readonly outbox: Outbox;
  protected abstract readonly router: CommandRouter;
  protected abstract readonly refusals: RefusalLog;
  protected abstract readonly uplink: Uplink;
  /** The agent's counters (stats()): this layer counts `submitted` and `invalid`, BlockAgent the rest. */
  protected readonly counters = {
    submitted: 0, acked: 0, invalid: 0, rejected: 0, activations: 0, revocations: 0, reconnects: 0,
  };
  /** Idempotency keys: a random prefix per agent instance and a counter (unique per node for far longer than 7 days). */
  private readonly keyPrefix = randomBytes(9).toString("base64url");
  private keySeq = 0;

  /** Stores one reading in the outbox; false when invalid. `link` names the link that owns the device. */
  submit(reading: Reading, link?: string): boolean {
    return this.submitMany([reading], link) === 1;
  }

  /** Stores readings in the outbox in one transaction; returns how many were valid and stored (0 when refused). */
  submitMany(readings: Reading[], link?: string): number {
    const n = this.store(readings, link);
    return n === "refused" ? 0 : n;
  }

  /**
   * As submit(), with the `lean` option: a lone reading is sent at once without being stored when
   * the uplink would send it alone anyway (Uplink.canLean: idle, the outbox empty, a token; behind
   * a full window it waits for a slot unstored), with the KEY and time it would have been stored
   * with; else it is stored.
   */
  submitLean(r: Reading): boolean {
    // Anything else (a config event, an invalid reading, a busy uplink) takes the stored path.
    if (this.o.lean === undefined || (r.kind !== undefined && r.kind !== "data" && r.kind !== "heartbeat") || r.value !== undefined || invalid(r) !== null || !this.uplink.canLean()) return this.submit(r);
    const ts = r.ts ?? this.clock();
    const KEY = `${this.keyPrefix}.${(this.keySeq++).toString(36)}`;
    this.counters.submitted++;
    this.uplink.sendLean(r.kind === "heartbeat", ts >= MIN_TIMESTAMP ? { G: r.G, V: r.V, D: r.D, DA: r.DA, TIMESTAMP: ts, KEY } : { G: r.G, V: r.V, D: r.D, DA: r.DA, KEY }, ts);
    return true;
  }

  /** As submitMany, but `refused` when the outbox could not write (disk full): nothing stored, nothing to ack. */
  store(readings: Reading[], link?: string): number | "refused" {
    const now = this.clock();
    const entries: NewOutboxEntry[] = [];
    for (const r of readings) {
      const problem = invalid(r);
      if (problem) {
        this.counters.invalid++;
        this.log.warn({ G: r?.G, V: r?.V, D: r?.D, problem }, "invalid reading skipped");
        continue;
      }
      if (link) this.router.owner(r.G, r.V, r.D, link);
      entries.push({ kind: r.kind ?? "data", G: r.G, V: r.V, D: r.D, DA: r.DA, value: r.value ?? null, ts: r.ts ?? now, key: `${this.keyPrefix}.${(this.keySeq++).toString(36)}` });
    }
    if (entries.length === 0) return 0;
    const dropped = this.refusals.append(this.outbox, entries);
    if (dropped === "refused") return "refused";
    this.counters.submitted += entries.length;
    if (dropped > 0) {
      this.log.warn({ dropped, limits: "outbox full" }, "outbox bounds reached: oldest readings dropped");
      this.emit("dropped", dropped);
    }
    this.uplink.notify();
    return entries.length;
  }
}

/** Why a reading cannot be stored, null when it can. */
function invalid(r: Reading): string | null {
  if (!r || typeof r !== "object") return "not an object";
  if (typeof r.G !== "string" || !isPort(r.G)) return "G must be 1-32 alphanumerics";
  if (!Number.isInteger(r.V) || r.V < 0 || r.V > 999_999_999) return "V must be a whole number";
  if (!Number.isInteger(r.D) || r.D < 0 || r.D > 999_999_999) return "D must be a whole number";
  if (typeof r.DA !== "string" || r.DA.length > MAX_DA_LENGTH) return `DA must be a string of at most ${MAX_DA_LENGTH} characters`;
  if (r.kind === "config" && r.DA.length === 0) return "a config event needs a type";
  if (r.ts !== undefined && !Number.isFinite(r.ts)) return "ts must be epoch ms";
  return null;
}
