-- Row ordering's dead letters (issue: a dead change was silently skipped). `skip` (the default):
-- the row's later changes go on. `hold`: they wait behind it until it is replayed and delivered,
-- or discarded. A held dead letter keeps its row keys and `holds_row`.
ALTER TABLE walgate.webhooks ADD COLUMN on_dead text NOT NULL DEFAULT 'skip' CHECK (on_dead IN ('skip', 'hold'));
ALTER TABLE walgate.deliveries ADD COLUMN holds_row boolean NOT NULL DEFAULT false;
CREATE INDEX deliveries_held_by_order_key ON walgate.deliveries (order_key, event_id) WHERE holds_row;
CREATE INDEX deliveries_held_by_old_order_key ON walgate.deliveries (order_key_old, event_id) WHERE holds_row AND order_key_old IS NOT NULL;
