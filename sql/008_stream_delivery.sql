-- The stream-first delivery engine (src/delivery/stream.ts).
--
-- A change delivered on its first attempt leaves exactly one row: its delivery, written after the
-- receiver answered, with that attempt folded in (no walgate.events row, no delivery_attempts
-- row). A delivery that failed, waited too long, or spilled over the in-memory budget is parked as
-- before: an events row (its payload), a deliveries row, and its attempts in delivery_attempts.
ALTER TABLE walgate.deliveries
  ADD COLUMN first_attempt_started_at timestamptz,
  ADD COLUMN first_attempt_duration_ms integer,
  -- the first KiB of the receiver's answer, for the delivery log
  ADD COLUMN first_attempt_response_body text;

-- The subscription view, versioned by WAL position: each row is a subscription as it stood from
-- the end of the transaction that changed it (spec NULL: deleted there). The tailer resumes at the
-- slot's confirmed position and rebuilds the view as of that position, so a version saved ahead of
-- the position (by a leader that died before acknowledging) never leaks into earlier changes.
ALTER TABLE walgate.tailer_subscriptions DROP CONSTRAINT tailer_subscriptions_pkey;
ALTER TABLE walgate.tailer_subscriptions
  ADD COLUMN valid_from pg_lsn NOT NULL DEFAULT '0/0',
  ALTER COLUMN spec DROP NOT NULL,
  ADD PRIMARY KEY (webhook_id, valid_from);
