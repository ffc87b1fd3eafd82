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
// changes along, in commit order, in its batch (sql/chains.ts). A row head of an unbatched
// row-ordered subscription takes them along too, as a run: one request each, back to back in
// commit order, stopping at the first that is not delivered (worker.ts) — after an outage a row
// moves a run of changes per claim round trip instead of one. Everything else goes alone.

/** One request's worth of claimed deliveries, with the body each contributes (rendered once). */
export interface ClaimedSend {
  deliveries: ClaimedDelivery[];
  bodies: string[];
  /** The batch's id (its webhook-id); null: one delivery sent alone, or a run. */
  batchId: string | null;
  /** A run: a row's changes in commit order, each sent alone after the one before was delivered. */
  run?: boolean;
}

/** How many of its row's next changes an unbatched row head takes along in its run. */
export const RUN_LENGTH = 32;

/** A row head whose row's next changes may follow it in a batch or a run: not a change of its key. */
const chainsFrom = (d: ClaimedDelivery) => d.order_key !== null && d.order_key_old === null;

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
  const runHeads: ClaimedDelivery[] = [];
  for (const d of claimed) {
    if (d.batch_id !== null) add(batches, d.batch_id, d);
    else if (d.batch_max_events > 1) add(unbatched, d.webhook_id, d);
    // A throttled subscription's requests each wait for their own turn (worker.ts): no runs.
    else if (chainsFrom(d) && d.rate_limit === null) runHeads.push(d);
    else sends.push({ deliveries: [d], bodies: [claimedBody(d)], batchId: null });
  }
  for (const [batchId, members] of batches) sends.push({ deliveries: members, bodies: members.map(claimedBody), batchId });
  const chains = await rowChains(
    pool,
    [...[...unbatched.values()].flat().filter(chainsFrom), ...runHeads],
    (head) => (head.batch_max_events > 1 ? head.batch_max_events - 1 : RUN_LENGTH),
    o,
  );
  for (const head of runHeads) {
    const run = [head, ...(chains.get(head) ?? [])];
    sends.push({ deliveries: run, bodies: run.map(claimedBody), batchId: null, run: run.length > 1 });
  }
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
 * Each row head's next changes (sql/chains.ts), up to `limit` of them (a batch's size, or a run's):
 * after an outage a row-ordered backlog moves many changes per row per round trip, not one. A
 * change whose payload is gone ends its chain (it is ended on its own when it heads its row), and
 * what follows.
 */
async function rowChains(
  pool: Pool,
  heads: ClaimedDelivery[],
  limit: (head: ClaimedDelivery) => number,
  o: { now: Date; maxBytes: number },
): Promise<Map<ClaimedDelivery, ClaimedDelivery[]>> {
  const out = new Map<ClaimedDelivery, ClaimedDelivery[]>();
  if (heads.length === 0 || o.maxBytes <= 0) return out;
  const rows = await claimChains(
    pool,
    heads.map((h) => ({ key: h.order_key!, eventId: h.delivery_event_id, limit: limit(h) })),
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
