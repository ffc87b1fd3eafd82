-- The retry queue's claim finds a row-ordered subscription's claimable deliveries among the heads
-- of its rows (src/delivery/sql/queue.ts claimDue), not among all its due deliveries. After a
-- receiver outage almost every parked delivery waits behind its row's head, whose retry is due
-- later (backoff), while the waiting ones are "due" since they were parked: walking the due range
-- visited that whole backlog (68,000 deliveries after 60 s at 1,000 changes/s) on every claim to
-- find the few heads.

-- A skip scan over a subscription's distinct unfinished row keys: one index descent per key
-- reaches its head (smallest event_id, that is commit order). Keys are hashes that name their
-- subscription (tailer/order-keys.ts) — sorted they say nothing of it, hence webhook_id first.
-- In the "C" collation: byte order is all a walk needs, and a key compared in the database's
-- collation (the claim's predecessor probes: a key alone) cannot take this index — they stay on
-- sql/009's, where a key is the first column (here it would be the second: a skip over every
-- subscription, or a scan).
CREATE INDEX deliveries_unfinished_order_keys_by_webhook ON walgate.deliveries (webhook_id, order_key COLLATE "C", event_id)
  WHERE status IN ('pending', 'retrying') AND order_key IS NOT NULL;

-- Unordered due deliveries by their own range, so that a subscription's unordered deliveries
-- (replays, tables without a primary key) are not looked for among its blocked ordered ones. The
-- unfinished statuses spelled as "neither delivered nor dead" (the same set, by the CHECK on
-- status): the claim's query spells them so too, and then no other index's predicate is implied —
-- the planner, counting on a LIMIT to stop early, chose deliveries_due (every subscription's due
-- range) and filtered it, a walk over the blocked backlog again.
CREATE INDEX deliveries_due_unordered_by_webhook ON walgate.deliveries (webhook_id, next_attempt_at)
  WHERE status NOT IN ('delivered', 'dead') AND order_key IS NULL;
