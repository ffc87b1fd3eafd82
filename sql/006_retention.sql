-- Retention (src/retention/): every table that grows with traffic is pruned by age, in small
-- batches. Each index below lets a batch find its oldest removable rows by an index range
-- instead of a scan of the table, however large the table has grown.

-- Delivered history, counted from its delivery (a delivery that waited long is kept the full
-- window after it finally went out).
CREATE INDEX deliveries_delivered_expiry ON walgate.deliveries (delivered_at) WHERE status = 'delivered';
-- Dead letters, counted from their capture (the retry schedule is minutes; the window is weeks).
CREATE INDEX deliveries_dead_expiry ON walgate.deliveries (created_at) WHERE status = 'dead';
-- An event is kept while an unfinished delivery or a dead letter may still need its payload.
-- Delivered rows are not in this index: it stays the size of the queue, not of the history.
CREATE INDEX deliveries_needing_event ON walgate.deliveries (event_id) WHERE status IN ('pending', 'retrying', 'dead');
-- Events oldest first, with the id as tie-break (the pruner pages through them by (committed_at, id)).
CREATE INDEX events_committed ON walgate.events (committed_at, id);

CREATE INDEX sessions_expiry ON walgate.sessions (expires_at);
CREATE INDEX verification_codes_expiry ON walgate.verification_codes (expires_at);
CREATE INDEX rate_limits_expiry ON walgate.rate_limits (expire);

-- These tables churn (every row is deleted within the retention window): vacuum them after a
-- smaller share of dead rows than the default 20 %, so the space of pruned rows is reused
-- promptly and the files stay the size of the window instead of growing between vacuums.
ALTER TABLE walgate.deliveries SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_insert_scale_factor = 0.02);
ALTER TABLE walgate.delivery_attempts SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_insert_scale_factor = 0.02);
ALTER TABLE walgate.events SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_insert_scale_factor = 0.02);
