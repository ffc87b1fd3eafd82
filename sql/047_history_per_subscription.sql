-- A subscription's history mode (docs/webhooks.md: History). 'full': every delivery leaves a row in
-- walgate.deliveries, as before. 'failures': a change delivered at its first attempt by the stream
-- leaves no row — only its count in walgate.delivery_minutes, written by the same statement that
-- would have written the row (src/delivery/sql/journal.ts) — while everything that goes through
-- the retry queue (failed, waited, spilled, dead) keeps its row, attempts and payload as before.
ALTER TABLE walgate.webhooks
  ADD COLUMN history text NOT NULL DEFAULT 'full' CHECK (history IN ('full', 'failures'));
