-- Batched delivery, opt-in per subscription (docs/webhooks.md: Batching). A batched subscription
-- POSTs `{"events": [...]}`, up to batch_max_events changes (1 = off, the default: one POST per
-- change) and batch_max_bytes of their bodies, gathering for at most batch_max_wait_ms.
ALTER TABLE walgate.webhooks
  ADD COLUMN batch_max_events int NOT NULL DEFAULT 1 CHECK (batch_max_events BETWEEN 1 AND 1000),
  ADD COLUMN batch_max_wait_ms int NOT NULL DEFAULT 100 CHECK (batch_max_wait_ms BETWEEN 0 AND 10000),
  ADD COLUMN batch_max_bytes int NOT NULL DEFAULT 1048576 CHECK (batch_max_bytes BETWEEN 1024 AND 10485760);
-- Every delivery sent in a batch keeps the batch's id (its webhook-id): retried or parked, it is
-- sent again with the same batch, same id, same events (src/delivery/batch-claims.ts). Null: sent
-- alone, or not sent yet.
ALTER TABLE walgate.deliveries ADD COLUMN batch_id text;
-- A batch's unfinished members, by batch: the retry queue claims a batch through its first
-- unfinished member (the lead) and takes the others with it (src/delivery/sql/queue.ts).
CREATE INDEX deliveries_unfinished_by_batch ON walgate.deliveries (batch_id, id)
  WHERE batch_id IS NOT NULL AND status IN ('pending', 'retrying');
