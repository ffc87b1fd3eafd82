-- TRUNCATE becomes an event kind a subscription may opt into.
ALTER TABLE walgate.events DROP CONSTRAINT events_operation_check,
  ADD CONSTRAINT events_operation_check CHECK (operation IN ('INSERT', 'UPDATE', 'DELETE', 'TRUNCATE'));
ALTER TABLE walgate.deliveries DROP CONSTRAINT deliveries_event_type_check,
  ADD CONSTRAINT deliveries_event_type_check CHECK (event_type IN ('INSERT', 'UPDATE', 'DELETE', 'TRUNCATE'));

-- A stretch of WAL whose changes were not captured (the slot lost WAL, or went missing),
-- one row per project environment it touched, so each tenant sees and
-- acknowledges its own. Kept until acknowledged; it names the subscriptions that were active then,
-- and the positions and times around it, so the gap can be repaired (a backfill of those
-- subscriptions) and is never only a log line.
CREATE TABLE walgate.capture_gaps (
  id               text PRIMARY KEY,                -- gap_<random>
  project_id       text NOT NULL,
  environment      text NOT NULL,
  slot_name        text NOT NULL,
  reason           text NOT NULL CHECK (reason IN ('slot_lost', 'slot_missing')),
  from_lsn         pg_lsn,                          -- the last position known processed
  to_lsn           pg_lsn,                          -- where capture resumed
  from_time        timestamptz,                     -- when from_lsn was recorded
  to_time          timestamptz NOT NULL,            -- when capture resumed (the gap was detected)
  webhook_ids      text[] NOT NULL,                 -- the subscriptions active at from_lsn
  acknowledged_at  timestamptz,
  acknowledged_by  text
);
CREATE INDEX capture_gaps_by_environment ON walgate.capture_gaps (project_id, environment, to_time);

-- What a subscription cannot follow any more (its table gone, a filter or select column dropped,
-- its table's replica identity changed): `since` is when it was first seen, kept while it lasts.
CREATE TABLE walgate.webhook_problems (
  webhook_id  text NOT NULL REFERENCES walgate.webhooks (id) ON DELETE CASCADE,
  code        text NOT NULL,
  message     text NOT NULL,
  since       timestamptz NOT NULL,
  PRIMARY KEY (webhook_id, code)
);
