import type { Pool } from '../core/db/pool.js';
import { batchBytes, chunk, newBatchId } from './batch.js';
import { renderPayload } from './payload.js';
import { assignBatches } from './sql/batches.js';
import type { ClaimedDelivery } from './sql/queue.js';

// The retry queue's requests (worker.ts): what one claim's deliveries become. A delivery sent in
// a batch (batch_id) goes again in that batch — the claim took its unfinished members together
// (sql/queue.ts: the lead rule) — under the same id, with the same events. A batched
// subscription's deliveries that were never sent in a batch (spilled, parked behind their row,
// paused, or parked before batching was turned on) form new batches here, whose ids are written
// on their members before the request goes. Everything else goes alone, as before.

/** One request's worth of claimed deliveries, with the body each contributes (rendered once). */
export interface ClaimedSend {
  deliveries: ClaimedDelivery[];
  bodies: string[];
  /** The batch's id (its webhook-id); null: one delivery sent alone. */
  batchId: string | null;
}

/** The event rendered as on the first attempt; once its event row is gone, the body kept on the delivery's row. */
export function claimedBody(d: ClaimedDelivery): string {
  return d.event_id === null ? d.kept_payload! : renderPayload(d);
}

/** Groups one claim's deliveries (in event order) into requests; new batches get their ids written first. */
export async function claimedSends(pool: Pool, claimed: ClaimedDelivery[]): Promise<ClaimedSend[]> {
  const sends: ClaimedSend[] = [];
  const batches = new Map<string, ClaimedDelivery[]>();
  const unbatched = new Map<string, ClaimedDelivery[]>();
  for (const d of claimed) {
    if (d.batch_id !== null) add(batches, d.batch_id, d);
    else if (d.batch_max_events > 1) add(unbatched, d.webhook_id, d);
    else sends.push({ deliveries: [d], bodies: [claimedBody(d)], batchId: null });
  }
  for (const [batchId, members] of batches) sends.push({ deliveries: members, bodies: members.map(claimedBody), batchId });
  const fresh: ClaimedSend[] = [];
  for (const list of unbatched.values()) {
    const bodies = new Map(list.map((d) => [d, claimedBody(d)]));
    const settings = { maxEvents: list[0]!.batch_max_events, maxBytes: list[0]!.batch_max_bytes, maxWaitMs: 0 };
    for (const members of chunk(list, (d) => batchBytes(bodies.get(d)!), settings)) {
      fresh.push({ deliveries: members, bodies: members.map((d) => bodies.get(d)!), batchId: newBatchId() });
    }
  }
  const written = await assignBatches(
    pool,
    fresh.flatMap((s) => s.deliveries.map((d) => ({ id: d.id, lease: d.lease, batchId: s.batchId! }))),
  );
  for (const s of fresh) {
    // A member whose claim ran out meanwhile is another worker's now: not sent here.
    const kept = s.deliveries.map((d, i) => [d, s.bodies[i]!] as const).filter(([d]) => written.has(d.id));
    if (kept.length > 0) sends.push({ deliveries: kept.map(([d]) => d), bodies: kept.map(([, b]) => b), batchId: s.batchId });
  }
  return sends;
}

function add<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}
