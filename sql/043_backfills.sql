-- Backfills (docs/backfills.md): a subscription asks for its table's existing rows, delivered as
-- READ events. The tailer reads the table in keyset pages between two watermarks it writes into
-- the WAL; `cursor` is where the next page starts (the sort values of the last row handed on, as
-- text), advanced only once that page's deliveries are settled, so a restart reads on from there.
ALTER TABLE walgate.events DROP CONSTRAINT events_operation_check,
  ADD CONSTRAINT events_operation_check CHECK (operation IN ('INSERT', 'UPDATE', 'DELETE', 'TRUNCATE', 'READ'));
ALTER TABLE walgate.deliveries DROP CONSTRAINT deliveries_event_type_check,
  ADD CONSTRAINT deliveries_event_type_check CHECK (event_type IN ('INSERT', 'UPDATE', 'DELETE', 'TRUNCATE', 'READ'));

CREATE TABLE walgate.backfills (
  id              text PRIMARY KEY,                 -- bf_<random>
  webhook_id      text NOT NULL REFERENCES walgate.webhooks (id) ON DELETE CASCADE,
  gap_id          text,                             -- the capture gap it repairs, when started from one
  state           text NOT NULL CHECK (state IN ('running', 'done', 'cancelled', 'failed')),
  filter          jsonb,                            -- equality on columns, besides the subscription's own
  sort_column     text,                             -- null: the primary key
  since           text,                             -- rows with sort_column >= since (as text, cast by Postgres)
  cursor          text[],                           -- sort values of the last row handed on; null before the first page
  until_key       text[],                           -- sort values of the last row when it started: rows after it are newer (the stream has them); null: the table was empty
  rows            bigint NOT NULL DEFAULT 0,        -- READ events handed to the subscription
  pages           integer NOT NULL DEFAULT 0,
  total_estimate  bigint,                           -- rows in the table when it started (planner estimate or count)
  error           text,
  created_at      timestamptz NOT NULL,
  updated_at      timestamptz NOT NULL,
  finished_at     timestamptz
);
-- One page in flight per subscription: at most one unfinished backfill each (BACKFILL_RUNNING).
CREATE UNIQUE INDEX backfills_one_running ON walgate.backfills (webhook_id) WHERE state = 'running';
CREATE INDEX backfills_by_webhook ON walgate.backfills (webhook_id, created_at DESC);
