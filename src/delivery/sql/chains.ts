import type { Pool } from '../../core/db/pool.js';
import { CLAIMED_COLUMNS, LEASED_RETURNING, type ClaimedDelivery } from './queue.js';

// A batched, row-ordered subscription's retry queue drains a row's backlog a batch at a time
// (delivery/batch-claims.ts): with each row head it claimed, the worker takes that row's next
// unfinished changes too, in commit order, to go in the head's batch after it — the receiver gets
// them in order inside one request, and the row moves up to maxEvents changes per round trip
// instead of one. (After an outage a row-ordered backlog is mostly such chains.)

export interface ChainHead {
  /** The claimed head's row key and event id (order_key, event_id). */
  key: string;
  eventId: string;
  /** How many of its row's next changes it may take. */
  limit: number;
}

/**
 * Claims, under `lease` (the head's own: the batch renews and records as one), each head's row's
 * next unfinished changes in commit order — as long as each is a plain successor: due, not in a
 * batch already, not a change of the primary key (order_key_old), and with no unfinished change
 * of another key moving into this one (order_key_old = key) or a held dead letter before it. The
 * first that is not ends the chain: nothing after it is taken. At most `maxBytes` of them in all
 * (the worker's byte budget), whole prefixes of each chain. Only rows still blocked by their
 * head can be taken here — the head is this worker's claim — so no other claim reaches them.
 */
export async function claimChains(
  pool: Pool,
  heads: ChainHead[],
  o: { now: Date; lease: Date; maxBytes: number },
): Promise<ClaimedDelivery[]> {
  if (heads.length === 0) return [];
  const { rows } = await pool.query<ClaimedDelivery>(
    `WITH heads AS (
       SELECT * FROM unnest($1::text[], $2::text[], $3::int[]) WITH ORDINALITY AS h(key, event_id, lim, n)
     ), chain AS (
       SELECT s.id, s.bytes, h.n, s.event_id,
              -- Where each chain ends: its first change that is not a plain successor, or the first
              -- unfinished change of another key that moves into this one, or a held dead letter.
              bool_or(s.order_key_old IS NOT NULL OR s.batch_id IS NOT NULL OR s.next_attempt_at > $4)
                OVER (PARTITION BY h.n ORDER BY s.event_id) AS ended,
              least((SELECT min(p.event_id) FROM walgate.deliveries p
                      WHERE p.order_key_old = h.key AND p.order_key_old IS NOT NULL AND p.event_id > h.event_id
                        AND p.status IN ('pending', 'retrying')),
                    (SELECT min(p.event_id) FROM walgate.deliveries p
                      WHERE p.order_key = h.key AND p.holds_row AND p.event_id > h.event_id)) AS fence
         FROM heads h CROSS JOIN LATERAL (
           SELECT c.id, c.event_id, c.order_key_old, c.batch_id, c.next_attempt_at,
                  coalesce(c.payload_bytes, 1024) + coalesce(octet_length(c.payload), 0) AS bytes
             FROM walgate.deliveries c
            WHERE c.order_key = h.key AND c.order_key IS NOT NULL AND c.status IN ('pending', 'retrying') AND c.event_id > h.event_id
            ORDER BY c.event_id LIMIT h.lim) s
     ), chosen AS (
       SELECT id FROM (SELECT id, sum(bytes) OVER (ORDER BY n, event_id) AS upto FROM chain
                        WHERE NOT ended AND (fence IS NULL OR event_id < fence)) c
        WHERE c.upto <= $6
     ), leased AS (
       -- A lease, not a retry slot (sql/044), the same as the head's.
       UPDATE walgate.deliveries d SET next_attempt_at = $5, retry_slot = false
        WHERE d.id = ANY (ARRAY(SELECT id FROM chosen)) AND d.status IN ('pending', 'retrying')
       RETURNING ${LEASED_RETURNING}
     )
     SELECT ${CLAIMED_COLUMNS('$4')}
       FROM leased d LEFT JOIN walgate.events e ON e.id = d.event_id JOIN walgate.webhooks w ON w.id = d.webhook_id
      ORDER BY d.event_id`,
    [heads.map((h) => h.key), heads.map((h) => h.eventId), heads.map((h) => h.limit), o.now, o.lease, o.maxBytes],
  );
  return rows;
}
