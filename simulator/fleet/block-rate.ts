/**
 * A simulated block's readings per second, as the TUI shows and sorts them: the fleet samples each
 * block's running total once a second (Fleet.tick).
 */

/**
 * A block's readings per second over the last RATE_WINDOW seconds. A one-second count flickers
 * between 0 and twice the rate whenever the block's readings fall close to the second's edge.
 */
export class BlockRate {
  private readonly marks: number[] = [];
  value = 0;

  /** Called once a second with the block's running total. */
  sample(total: number): void {
    this.marks.push(total);
    if (this.marks.length > RATE_WINDOW + 1) this.marks.shift();
    const first = this.marks[0] as number;
    const span = this.marks.length - 1;
    this.value = span === 0 ? 0 : Math.round(((total - first) / span) * 10) / 10;
  }
}

const RATE_WINDOW = 5;
