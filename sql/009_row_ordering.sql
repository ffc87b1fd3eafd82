-- Row ordering (a subscription's `ordering`: 'none' or 'row'). With 'row' the changes of one row
-- of the table (its primary key) are delivered one at a time, in commit order.
--
-- Numbered 009 but written after 010: the migrator applies every file it has not recorded, so a
-- database already at 010 applies this one next (test/foundation/migrate.test.ts).
ALTER TABLE walgate.webhooks
  ADD COLUMN ordering text NOT NULL DEFAULT 'none' CHECK (ordering IN ('none', 'row'));

-- A parked delivery of a row-ordered subscription carries its row's order key (a hash of the
-- subscription, the table and the primary-key values, src/tailer/order-keys.ts), and for a change
-- of the primary key itself the old key too. NULL: unordered (the subscription's ordering was
-- 'none', the table has no primary key, or the delivery was replayed — a replay goes at once and
-- blocks nobody).
ALTER TABLE walgate.deliveries ADD COLUMN order_key text, ADD COLUMN order_key_old text;

-- The retry queue's claim takes a delivery only when no earlier (smaller event_id) unfinished
-- delivery shares one of its keys (src/delivery/store.ts claimDue): one probe per key and column.
-- A key names its subscription, so the probes look the key up alone: given the subscription too,
-- the planner could take deliveries_due_by_webhook and filter — a scan of the subscription's whole
-- backlog for every candidate. Delivered and dead deliveries are not in these indexes: they block
-- nobody.
CREATE INDEX deliveries_unfinished_by_order_key ON walgate.deliveries (order_key, event_id)
  WHERE status IN ('pending', 'retrying') AND order_key IS NOT NULL;
CREATE INDEX deliveries_unfinished_by_old_order_key ON walgate.deliveries (order_key_old, event_id)
  WHERE status IN ('pending', 'retrying') AND order_key_old IS NOT NULL;
