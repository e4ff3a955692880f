/** GET /device/:guid/data: defaults, validation and formatting around the store's folding query. */
import { type FoldFn, formatPointTime, parseInterval } from "../../protocol/history.js";
import { badRequest } from "../errors.js";
import type { Store } from "../store/types.js";

export const DAY_MS = 86_400_000;
/** Raw (unfolded) answers hold at most this many readings; ask for an interval beyond. */
export const MAX_RAW_POINTS = 100_000;

export interface DataPoint {
  t: string;
  v: number | string;
}

export interface HistoryParams {
  from?: number | undefined;
  to?: number | undefined;
  interval?: string | undefined;
  fn?: string | undefined;
}

export function resolveRange(q: HistoryParams, now: number): { from: number; to: number } {
  const to = q.to ?? now;
  const from = q.from ?? to - DAY_MS;
  if (from > to) throw badRequest(`from (${from}) is after to (${to})`);
  return { from: Math.max(0, Math.floor(from)), to: Math.floor(to) };
}

export class HistoryService {
  constructor(
    private readonly store: Store,
    private readonly clock: () => number = Date.now,
  ) {}

  async query(deviceId: number, q: HistoryParams): Promise<DataPoint[]> {
    const { from, to } = resolveRange(q, this.clock());
    const interval = q.interval === undefined ? null : parseInterval(q.interval);
    if (q.interval !== undefined && interval === null) {
      throw badRequest(`interval "${q.interval}" is not <number><unit> with unit min, hour, day, month or year`);
    }
    const fn = (q.fn ?? "mean") as FoldFn;
    if (interval === null) {
      const n = await this.store.history.count(deviceId, from, to);
      if (n > MAX_RAW_POINTS) {
        throw badRequest(`the range holds ${n} readings, more than ${MAX_RAW_POINTS}: narrow from/to or give an interval`);
      }
    }
    const points = await this.store.history.query(deviceId, { from, to, interval, fn });
    return points.map((p) => ({ t: formatPointTime(p.t), v: p.v }));
  }
}
