/**
 * The user's leg of the two-legged flow for the fleet (fleet.ts): for each of the first
 * `two_legged` blocks, claims the block as the user (POST /block) once it is found waiting, paced
 * by the run's CredentialPacer, with the waits after a 429 not counted against the give-up time.
 * Apart from the fleet, which starts the blocks and ends their activations, because the claims
 * are a loop of their own with their own waits, counts and give-up rule.
 */
import { Backoff, retryAfterOf, sleep } from "../../gateway/agent/backoff.js";
import type { Random } from "../random.js";
import type { FleetOptions } from "./fleet.js";
import type { CredentialPacer } from "./pacer.js";
import { BLOCK_BACKOFF, type VirtualBlock } from "./virtual-block.js";

/** A two-legged claim is first tried this long after the block started, ms, then every CLAIM_STEP_MS. */
const CLAIM_FIRST_MS = 50;
const CLAIM_STEP_MS = 200;
/**
 * A claim gives up (`claim_gave_up`) once the block has not been found waiting for this long, ms, on
 * the fleet's clock; the tries answered 429 do not count, nor the Retry-After they waited.
 */
export const CLAIM_GIVE_UP_MS = 20_000;

export class Claims {
  /** The claims in flight. */
  readonly pending = new Set<Promise<void>>();
  /** Two-legged blocks the simulator claimed (POST /block answered): their held request gets the token. */
  readonly claimed = new Set<VirtualBlock>();
  private stopped = false;
  /** Aborted by stop(): ends the claims' waits (a Retry-After may be minutes). */
  private readonly stopping = new AbortController();

  constructor(
    private readonly o: FleetOptions,
    private readonly rng: Random,
    private readonly pacer: CredentialPacer,
    /** A block's claims gave up: its activation failed. */
    private readonly onGaveUp: () => void,
  ) {}

  /** Claims `b` (a two-legged block just started) in the background. */
  start(b: VirtualBlock): void {
    const p = this.claim(b).finally(() => this.pending.delete(p));
    this.pending.add(p);
  }

  /** No claim is tried any more; the waits in progress end at once. */
  stop(): void {
    this.stopped = true;
    this.stopping.abort();
  }

  /**
   * The user's leg of the two-legged flow: claim once the block is waiting (404 until it is). A 429
   * is the user token's backpressure, not the block's absence: counted as throttled, asked again after
   * the server's Retry-After (bounded as the agent's loops bound it, retryAfterFloor) plus the usual
   * step plus a backoff's full jitter, as the agent's loops add it (blocks throttled together do not
   * all come back at one instant; drawn from the run's seeded stream, one child per block, so a seed
   * reproduces the waits whatever the order of the answers), and the time it took is not counted
   * against CLAIM_GIVE_UP_MS.
   */
  private async claim(b: VirtualBlock): Promise<void> {
    const clock = this.o.clock ?? Date.now;
    const pause = this.o.sleep ?? sleep;
    const jitter = this.rng.child(`claim/${b.nodeId}`);
    const backoff = new Backoff({ ...BLOCK_BACKOFF, random: () => jitter.next(), clock });
    let deadline = clock() + CLAIM_GIVE_UP_MS;
    let wait = CLAIM_FIRST_MS;
    /** When the last try was answered 429 (null otherwise): from then to the next try is the server's. */
    let throttledAt: number | null = null;
    while (!this.stopped && !b.activated && clock() < deadline) {
      await pause(wait, this.stopping.signal);
      await this.pacer.take();
      if (this.stopped || b.activated) return;
      const tried = clock();
      // The Retry-After wait (and the pacer's) after a 429 does not count, whatever answers next.
      if (throttledAt !== null) deadline += tried - throttledAt;
      throttledAt = null;
      try {
        await this.o.api.claimBlock(b.nodeId);
        this.claimed.add(b);
        this.o.log("info", `${b.nodeId}: claimed (two-legged activation)`);
        return;
      } catch (err) {
        const status = (err as { status?: number }).status ?? 0;
        wait = CLAIM_STEP_MS;
        if (status === 429) {
          this.o.metrics.throttled("claim");
          wait += retryAfterOf(err) + backoff.fail();
          // A throttled try is the server's time, not the block's: it does not count either.
          throttledAt = clock();
          deadline += throttledAt - tried;
        } else {
          // Not throttled: the jitter's ceiling starts again once the server has answered for a while.
          backoff.succeed();
          if (status !== 404) {
            this.o.metrics.error(`claim_${status === 0 ? "network" : `http_${status}`}`);
            this.o.log("warn", `${b.nodeId}: claim failed: ${(err as Error).message}`);
          }
        }
      }
    }
    if (!b.activated && !this.stopped) {
      this.onGaveUp();
      this.o.metrics.error("claim_gave_up");
      this.o.log("warn", `${b.nodeId}: not waiting for activation after ${CLAIM_GIVE_UP_MS / 1000} s of claims: gave up`);
    }
  }
}
