/**
 * The queued commands of this instance handed to a poll whose fate is not known yet (CommandHub):
 * by id, with their node and the time past which they may be handed out again. A block polls again
 * the moment an answer arrives, and the removal of the commands it carried (after the write, so that
 * nothing is lost) had often not committed when that next poll read the queue: the block got the same
 * command twice. While a node has one here, its polls hand out nothing and a new command of its is
 * queued behind, not handed over directly, so that should the answer be lost it goes out again first.
 */

/** A command handed out and never reported on (a route that never came back) is free after this, ms. */
export const HANDED_OUT_MS = 10_000;

export class HandedOut {
  /** In hand-out order, so by expiry (every entry gets the same bound). */
  private readonly byId = new Map<number, { nodeId: string; until: number }>();
  private readonly byNode = new Map<string, number>();

  constructor(
    private readonly now: () => number = () => performance.now(),
    private readonly boundMs = HANDED_OUT_MS,
  ) {}

  get size(): number {
    return this.byId.size;
  }

  /** Command `id` of `nodeId` went out in a poll's answer. */
  add(id: number, nodeId: string): void {
    this.settle(id);
    this.byId.set(id, { nodeId, until: this.now() + this.boundMs });
    this.byNode.set(nodeId, (this.byNode.get(nodeId) ?? 0) + 1);
  }

  /** Whether command `id` is on its way (past its bound it is not, and is forgotten). */
  has(id: number): boolean {
    const h = this.byId.get(id);
    if (h === undefined) return false;
    if (h.until > this.now()) return true;
    this.settle(id);
    return false;
  }

  /** Whether any command of the node is on its way (entries past their bound included until expire()). */
  hasNode(nodeId: string): boolean {
    return this.byNode.has(nodeId);
  }

  /** Command `id`'s fate is known: forgotten. Returns its node when it was here. */
  settle(id: number): string | undefined {
    const h = this.byId.get(id);
    if (h === undefined) return undefined;
    this.byId.delete(id);
    const n = (this.byNode.get(h.nodeId) ?? 1) - 1;
    if (n > 0) this.byNode.set(h.nodeId, n);
    else this.byNode.delete(h.nodeId);
    return h.nodeId;
  }

  /** Forgets the entries past their bound; returns their nodes (whose held polls may now get them). */
  expire(): Set<string> | null {
    const now = this.now();
    let nodes: Set<string> | null = null;
    for (const [id, h] of this.byId) {
      if (h.until > now) break;
      this.settle(id);
      (nodes ??= new Set()).add(h.nodeId);
    }
    return nodes;
  }
}
