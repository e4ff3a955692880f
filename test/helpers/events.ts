/** Block events for store and ingest-thread tests. */
import type { IngestEvent } from "../../server/store/types.js";

/** A `data` event of device `G` (vendor 0, type 9) on `node`, its number read from DA. */
export function dataEvent(node: string, userId: number, G: string, DA: string, extra: Partial<IngestEvent> = {}): IngestEvent {
  return {
    kind: "data",
    userId,
    node,
    guid: `${node}_${G}_0_9`,
    G,
    V: 0,
    D: 9,
    DA,
    num: Number.isFinite(Number(DA)) ? Number(DA) : null,
    ts: Date.now(),
    key: undefined,
    payload: undefined,
    ...extra,
  };
}
