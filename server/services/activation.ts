/**
 * Block activation (DESIGN.md "Activation"). Two-legged: the block holds GET /block/:nodeId/activate
 * and is "awaiting activation" while it does and for `awaitMs` after its last one; a user's claim
 * marks the token as pending and wakes the waiter, which is handed a fresh token. No token is kept
 * in plain text: it is made at the moment of delivery.
 */
import type { Logger } from "pino";
import type { Bus } from "../bus/types.js";
import { ServiceError, conflict, notFound } from "../errors.js";
import type { Store } from "../store/types.js";
import type { AuthService } from "./auth.js";
import type { Limits } from "./limits.js";
import { refuseServiceNode } from "./service-devices.js";
import type { StreamPublisher } from "./stream/publisher.js";

/** Most blocks awaiting activation listed to one user. */
const AWAITING_LIST_MAX = 50;

export interface ActivationOptions {
  /** Longest hold of an activation request, ms. Default 30 000. */
  holdMs: number;
  /** How long a block stays "awaiting activation" after its last request, ms. Default 60 000. */
  awaitMs: number;
  /**
   * Several instances share the store: a block's waiting is recorded in it, so that a claim on any
   * instance finds it (a write per activation request, which a lone instance does without).
   */
  shared?: boolean;
}

export class Activation {
  /** node id -> time of its last activation request (or now while one is held). */
  private readonly lastSeen = new Map<string, number>();
  private readonly held = new Map<string, Set<(token: string | null) => void>>();
  private readonly delivering = new Map<string, Promise<string | null>>();
  /** Held requests per client address, and in all (limits.maxActivationHolds*). */
  private readonly holdsByAddress = new Map<string, number>();
  private holds = 0;
  /** Blocks awaiting activation and not yet handed a token: node id -> the client address it asks from (null: unknown). */
  private readonly asking = new Map<string, string | null>();
  private stopped = false;

  constructor(
    private readonly store: Store,
    private readonly bus: Bus,
    private readonly auth: AuthService,
    private readonly log: Logger,
    private readonly options: ActivationOptions,
    private readonly limits: Limits,
    private readonly clock: () => number = Date.now,
    private readonly events?: StreamPublisher,
  ) {}

  stop(): void {
    this.stopped = true;
    for (const set of this.held.values()) for (const f of [...set]) f(null);
  }

  isAwaiting(nodeId: string): boolean {
    if (this.held.has(nodeId)) return true;
    const seen = this.lastSeen.get(nodeId);
    return seen !== undefined && this.clock() - seen <= this.options.awaitMs;
  }

  /** Activation requests held now (metrics). */
  get heldCount(): number {
    return this.holds;
  }

  /**
   * The two-legged flow: resolves with the token once claimed, or null when the hold ends. Throws
   * 429 when `address` already holds its share of requests, or the server all it holds, with a
   * Retry-After of the hold's length (a place is freed by then at the latest). While held,
   * the request's `connection` (its socket) is not evicted at the connection cap: a block waiting
   * for its token has no credential to prove its connection with, and would otherwise be the first
   * reset (Limits.holdActivation); these holds are bounded by the two caps above instead. `client`:
   * the address the block is listed to users from (awaitingFor); default `address`, null for unknown
   * (a trusted proxy's request without X-Forwarded-For: server/http/client-address.ts).
   */
  async wait(nodeId: string, onAbort: (cancel: () => void) => void, address = "", connection?: object, client: string | null = address): Promise<string | null> {
    refuseServiceNode(nodeId);
    const o = this.limits.options;
    // Every held request ends within holdMs (answered null, and asked again): a place is free by then.
    const retryAfterS = Math.max(1, Math.ceil(this.options.holdMs / 1000));
    const mine = this.holdsByAddress.get(address) ?? 0;
    if (mine >= o.maxActivationHoldsPerAddress && this.limits.capped(address)) {
      this.limits.bit("activation_holds_per_address", { address, max: o.maxActivationHoldsPerAddress });
      throw new ServiceError("RATE_LIMITED", `too many activation requests held from this address (limit ${o.maxActivationHoldsPerAddress}); ask again later`, { retryAfterS });
    }
    if (this.holds >= o.maxActivationHolds) {
      this.limits.bit("activation_holds", { address, max: o.maxActivationHolds });
      throw new ServiceError("RATE_LIMITED", "too many activation requests held; ask again later", { retryAfterS });
    }
    this.holds++;
    this.holdsByAddress.set(address, mine + 1);
    const unhold = connection ? this.limits.holdActivation(connection) : undefined;
    try {
      return await this.hold(nodeId, onAbort, client);
    } finally {
      unhold?.();
      this.holds--;
      const left = (this.holdsByAddress.get(address) ?? 1) - 1;
      if (left <= 0) this.holdsByAddress.delete(address);
      else this.holdsByAddress.set(address, left);
    }
  }

  /** `address` is the block's client address (the dashboard lists unclaimed blocks to users who ask from the same address). */
  private async hold(nodeId: string, onAbort: (cancel: () => void) => void, address: string | null): Promise<string | null> {
    const fresh = !this.isAwaiting(nodeId) || !this.asking.has(nodeId);
    this.lastSeen.set(nodeId, this.clock());
    this.asking.set(nodeId, address);
    this.prune();
    if (fresh) this.announce(nodeId, address);
    if (this.options.shared) await this.store.blocks.markAwaiting(nodeId, this.clock() + this.options.holdMs + this.options.awaitMs);
    const ready = await this.deliverPending(nodeId);
    if (ready) this.asking.delete(nodeId);
    if (ready || this.stopped) return ready;
    return new Promise<string | null>((resolve) => {
      let set = this.held.get(nodeId);
      if (!set) {
        set = new Set();
        this.held.set(nodeId, set);
      }
      const finish = (token: string | null): void => {
        clearTimeout(timer);
        unsubscribe();
        const s = this.held.get(nodeId);
        s?.delete(finish);
        if (s?.size === 0) this.held.delete(nodeId);
        this.lastSeen.set(nodeId, this.clock());
        if (token) this.asking.delete(nodeId);
        resolve(token);
      };
      set.add(finish);
      const timer = setTimeout(() => finish(null), this.options.holdMs);
      const unsubscribe = this.bus.subscribe(`act:${nodeId}`, () => {
        this.deliverPending(nodeId).then(
          (token) => {
            if (token) for (const f of [...(this.held.get(nodeId) ?? [])]) f(token);
          },
          (err: unknown) => this.log.error({ err, nodeId }, "delivering a block token failed"),
        );
      });
      onAbort(() => finish(null));
    });
  }

  /** A user claims a block that is awaiting activation (POST /block). */
  async claim(nodeId: string, userId: number): Promise<void> {
    refuseServiceNode(nodeId);
    const block = await this.store.blocks.get(nodeId);
    if (block && block.user_id !== userId) throw conflict(`block ${nodeId} is claimed by another account`);
    const awaiting = this.isAwaiting(nodeId) || (this.options.shared && ((await this.store.blocks.awaitingUntil(nodeId)) ?? 0) >= this.clock());
    if (!awaiting) throw notFound(`block ${nodeId} is not awaiting activation: start its activation first`);
    await this.store.blocks.claim(nodeId, userId, this.clock(), this.clock() + this.options.awaitMs);
    this.bus.publish(`act:${nodeId}`, "");
    this.asking.delete(nodeId);
    this.events?.block(userId, nodeId, "claimed");
  }

  /** The direct flow: claim for the user and hand the token over at once. */
  async direct(nodeId: string, userId: number): Promise<string> {
    refuseServiceNode(nodeId);
    const block = await this.store.blocks.get(nodeId);
    if (block && block.user_id !== userId) throw conflict(`block ${nodeId} is claimed by another account`);
    const { token, row } = this.auth.mint(userId, "block", { nodeId });
    this.auth.forget((await this.store.blocks.claimWithToken(nodeId, userId, this.clock(), row)).revoked);
    this.asking.delete(nodeId);
    if (!block) this.events?.block(userId, nodeId, "claimed");
    return token;
  }

  /**
   * Blocks awaiting activation that a user may claim, newest first: the user's own blocks asking
   * again, and unclaimed blocks asking from the user's own client address (on a home network, the
   * hub and the phone; a user elsewhere types the node id). At most AWAITING_LIST_MAX.
   */
  async awaitingFor(userId: number, address: string | null): Promise<{ nodeId: string; since: number }[]> {
    const out: { nodeId: string; since: number }[] = [];
    for (const [nodeId, from] of this.asking) {
      if (!this.isAwaiting(nodeId)) {
        this.asking.delete(nodeId);
        continue;
      }
      const block = await this.store.blocks.get(nodeId);
      const pending = block?.token_pending_until != null && block.token_pending_until >= this.clock();
      if (pending) continue;
      if (block ? block.user_id === userId : from !== null && from === address) out.push({ nodeId, since: this.lastSeen.get(nodeId) ?? 0 });
    }
    return out.sort((a, b) => b.since - a.since).slice(0, AWAITING_LIST_MAX);
  }

  /** A block starts awaiting activation: its owner hears of it, or for an unclaimed one, its address. */
  private announce(nodeId: string, address: string | null): void {
    if (!this.events) return;
    this.store.blocks.get(nodeId).then(
      (block) => {
        if (block) this.events?.block(block.user_id, nodeId, "awaiting");
        else if (address !== null) this.events?.awaiting(nodeId, address);
      },
      (err: unknown) => this.log.warn({ err, nodeId }, "announcing a block awaiting activation failed"),
    );
  }

  /** Issues the token of a claimed block whose token is pending; null when there is none. */
  private deliverPending(nodeId: string): Promise<string | null> {
    // Concurrent waiters of one node share one delivery, so they all get the same token.
    let p = this.delivering.get(nodeId);
    if (!p) {
      p = this.issuePending(nodeId).finally(() => this.delivering.delete(nodeId));
      this.delivering.set(nodeId, p);
    }
    return p;
  }

  private async issuePending(nodeId: string): Promise<string | null> {
    const block = await this.store.blocks.takePending(nodeId, this.clock());
    if (!block) return null;
    return this.auth.issue(block.user_id, "block", { nodeId });
  }

  private prune(): void {
    if (this.lastSeen.size < 10_000) return;
    const cutoff = this.clock() - this.options.awaitMs;
    for (const [node, seen] of this.lastSeen) {
      if (seen < cutoff && !this.held.has(node)) {
        this.lastSeen.delete(node);
        this.asking.delete(node);
      }
    }
  }
}
