-- Row ordering (a subscription's `ordering`: 'none' or 'row'). With 'row' the changes of one row
-- of the table (its primary key) are delivered one at a time, in commit order.
--
-- Numbered 009 but written after 010: the migrator applies every file it has not recorded, so a
-- database already at 010 applies this one next (test/foundation/migrate.test.ts).
ALTER TABLE walgate.webhooks
  ADD COLUMN ordering text NOT NULL DEFAULT 'none' CHECK (ordering IN ('none', 'row'));

-- A parked delivery of a row-ordered subscription carries its row's order key (a hash of the
-- table and the primary-key values, src/tailer/order-keys.ts), and for a change of the primary key
-- itself the old key too. NULL: unordered (the subscription's ordering was 'none', the table has no
-- primary key, or the delivery was replayed — a replay goes at once and blocks nobody).
ALTER TABLE walgate.deliveries ADD COLUMN order_key text, ADD COLUMN order_key_old text;

-- The retry queue's claim takes a delivery only when no earlier (smaller event_id) unfinished
-- delivery of its subscription shares one of its keys (src/delivery/store.ts claimDue): one index
-- probe per key column. Delivered and dead deliveries are not in them, so they block nobody.
CREATE INDEX deliveries_unfinished_by_order_key ON walgate.deliveries (webhook_id, order_key, event_id)
  WHERE status IN ('pending', 'retrying') AND order_key IS NOT NULL;
CREATE INDEX deliveries_unfinished_by_old_order_key ON walgate.deliveries (webhook_id, order_key_old, event_id)
  WHERE status IN ('pending', 'retrying') AND order_key_old IS NOT NULL;
