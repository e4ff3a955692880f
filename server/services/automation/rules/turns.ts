/**
 * Turns of the event loop for rule runs: `next()` resolves in a later turn, at most `perTurn` runs
 * per turn, so that the runs fired by one event (10,000 rules) start spread over as many turns as
 * it takes, with I/O (other users' requests) served between them.
 */
export class Turns {
  private readonly waiters: (() => void)[] = [];
  private scheduled = false;

  constructor(private readonly perTurn: number) {}

  next(): Promise<void> {
    return new Promise<void>((resolve) => {
      this.waiters.push(resolve);
      if (this.scheduled) return;
      this.scheduled = true;
      const go = (): void => {
        for (const f of this.waiters.splice(0, this.perTurn)) f();
        if (this.waiters.length > 0) setImmediate(go);
        else this.scheduled = false;
      };
      setImmediate(go);
    });
  }
}
