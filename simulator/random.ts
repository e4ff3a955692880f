/**
 * A seeded random source (mulberry32 for the stream, splitmix-style hashing to derive child
 * streams), so that `--seed` reproduces a run: the same seed gives every generator of every block
 * the same sequence, whatever the order the blocks were started in.
 */

function hashString(text: string): number {
  // FNV-1a, 32 bits.
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

export class Random {
  private state: number;
  /** The seed this stream started from; child streams derive from it, not from the current state. */
  readonly seed: number;

  constructor(seed: number | string) {
    this.seed = (typeof seed === "number" ? seed : hashString(seed)) >>> 0;
    this.state = this.seed;
  }

  /** A uniform number in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  }

  /** A uniform number in [min, max). */
  uniform(min: number, max: number): number {
    return min + (max - min) * this.next();
  }

  /** A whole number in [0, n). */
  int(n: number): number {
    return Math.floor(this.next() * n);
  }

  /** A standard normal deviate (Box-Muller). */
  normal(): number {
    const u = 1 - this.next();
    const v = this.next();
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
  }

  /** An exponential wait with the given mean (the gap between Poisson arrivals). */
  exponential(mean: number): number {
    return -Math.log(1 - this.next()) * mean;
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new TypeError("pick() needs at least one item");
    return items[this.int(items.length)] as T;
  }

  /** An independent stream derived from this seed and a name (e.g. a node id and a port). */
  child(name: string): Random {
    return new Random((hashString(name) ^ Math.imul(this.seed, 0x9e3779b1)) >>> 0);
  }
}

/**
 * A block's backoff jitter from a run's seed (BlockAgentOptions.jitter): a stream per block, by node
 * id (whatever part of the fleet runs it, or `sim replay`), and a child of it per loop (activate,
 * uplink, poll), so that a loop's waits do not hang on the others'.
 */
export function blockJitter(rng: Random, nodeId: string): (loop: string) => () => number {
  const block = rng.child(`backoff/${nodeId}`);
  return (loop) => {
    const stream = block.child(loop);
    return () => stream.next();
  };
}
