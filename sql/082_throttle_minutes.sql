-- The throttle's waits in the per-minute rollup, so that a subscription's health shows them: the
-- requests that waited for their turn (delivery/throttle.ts) and how long, in ms. The leading
-- tailer counts them in memory and adds them every few seconds (delivery/sql/throttle-minutes.ts),
-- under its own backend's row like every other writer of the rollup.
ALTER TABLE walgate.delivery_minutes
  ADD COLUMN throttled integer NOT NULL DEFAULT 0,
  ADD COLUMN throttled_ms bigint NOT NULL DEFAULT 0;
