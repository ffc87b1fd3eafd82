import type { Pool } from '../core/db/pool.js';
import { batchBytes, newBatchId, pack, withinBudget } from './batch.js';
import { renderPayload } from './payload.js';
import { assignBatches } from './sql/batches.js';
import { claimChains } from './sql/chains.js';
import { postpone, type ClaimedDelivery } from './sql/queue.js';

// The retry queue's requests (worker.ts): what one claim's deliveries become. A delivery sent in
// a batch (batch_id) goes again in that batch — the claim took its unfinished members together
// (sql/queue.ts: the lead rule) — under the same id, with the same events. A batched
// subscription's deliveries that were never sent in a batch (spilled, parked behind their row,
// paused, or parked before batching was turned on) form new batches here, whose ids are written
// on their members before the request goes; a row head of a row-ordered one takes its row's next
// changes along, in commit order, in its batch (sql/chains.ts). Everything else goes alone.

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

/**
 * Groups one claim's deliveries (in event order) into requests; new batches get their ids written
 * first. `now` is the claim's time, `maxBytes` what the worker may still hold (row chains take it),
 * `heldBytes` the tailer's whole byte budget (no new batch is larger than half of it).
 */
export async function claimedSends(
  pool: Pool,
  claimed: ClaimedDelivery[],
  o: { now: Date; maxBytes: number; heldBytes: number },
): Promise<ClaimedSend[]> {
  const sends: ClaimedSend[] = [];
  const batches = new Map<string, ClaimedDelivery[]>();
  const unbatched = new Map<string, ClaimedDelivery[]>();
  for (const d of claimed) {
    if (d.batch_id !== null) add(batches, d.batch_id, d);
    else if (d.batch_max_events > 1) add(unbatched, d.webhook_id, d);
    else sends.push({ deliveries: [d], bodies: [claimedBody(d)], batchId: null });
  }
  for (const [batchId, members] of batches) sends.push({ deliveries: members, bodies: members.map(claimedBody), batchId });
  const chains = await rowChains(pool, [...unbatched.values()].flat(), o);
  const fresh: ClaimedSend[] = [];
  const left: ClaimedDelivery[] = [];
  for (const list of unbatched.values()) {
    const bodies = new Map<ClaimedDelivery, string>();
    const bodyOf = (d: ClaimedDelivery) => bodies.get(d) ?? bodies.set(d, claimedBody(d)).get(d)!;
    const settings = withinBudget({ maxEvents: list[0]!.batch_max_events, maxBytes: list[0]!.batch_max_bytes, maxWaitMs: 0 }, o.heldBytes);
    const packed = pack(
      list.map((d) => [d, ...(chains.get(d) ?? [])]),
      (d) => batchBytes(bodyOf(d)),
      settings,
    );
    left.push(...packed.left);
    for (const members of packed.batches) fresh.push({ deliveries: members, bodies: members.map(bodyOf), batchId: newBatchId() });
  }
  // What did not fit behind its row's head goes back, due now (still behind the head it follows).
  if (left.length > 0) await postpone(pool, left, o.now);
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

/**
 * Each row head's next changes (sql/chains.ts), up to its batch's size: after an outage a
 * row-ordered backlog moves a batch of changes per row per round trip, not one. A change whose
 * payload is gone ends its chain (it is ended on its own when it heads its row), and what follows.
 */
async function rowChains(
  pool: Pool,
  unbatched: ClaimedDelivery[],
  o: { now: Date; maxBytes: number },
): Promise<Map<ClaimedDelivery, ClaimedDelivery[]>> {
  const heads = unbatched.filter((d) => d.order_key !== null && d.order_key_old === null);
  const out = new Map<ClaimedDelivery, ClaimedDelivery[]>();
  if (heads.length === 0 || o.maxBytes <= 0) return out;
  const rows = await claimChains(
    pool,
    heads.map((h) => ({ key: h.order_key!, eventId: h.delivery_event_id, limit: h.batch_max_events - 1 })),
    { now: o.now, lease: heads[0]!.lease, maxBytes: o.maxBytes },
  );
  const byKey = new Map<string, ClaimedDelivery[]>();
  for (const r of rows) add(byKey, r.order_key!, r);
  const gone: ClaimedDelivery[] = [];
  for (const head of heads) {
    const chain = byKey.get(head.order_key!) ?? [];
    const cut = chain.findIndex((d) => d.payload_gone);
    if (cut >= 0) gone.push(...chain.splice(cut));
    if (chain.length > 0) out.set(head, chain);
  }
  if (gone.length > 0) await postpone(pool, gone, o.now);
  return out;
}
