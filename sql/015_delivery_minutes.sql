-- Per-minute delivery outcomes per subscription, written with the history by triggers, so that a
-- subscription's health and its hour of per-minute counts read at most a few thousand small rows
-- whatever the traffic (before: a scan of 25 hours of deliveries and their attempts per call).
--
-- Keyed by the writing backend too: two transactions never add to the same row, so the rollup adds
-- no lock waits (and no deadlocks) between the tailer's writers, the retry queue and the API. A
-- minute has one row per backend that wrote in it; readers sum them.
CREATE TABLE walgate.delivery_minutes (
  webhook_id         text NOT NULL REFERENCES walgate.webhooks (id) ON DELETE CASCADE,
  minute             timestamptz NOT NULL,
  backend            integer NOT NULL,
  delivered          integer NOT NULL DEFAULT 0,
  -- Failed requests (no answer or not 2xx); attempts skipped by an open breaker made none.
  failed             integer NOT NULL DEFAULT 0,
  last_delivered_at  timestamptz,
  PRIMARY KEY (webhook_id, minute, backend)
);
-- The newest minute with a delivery (lastSuccessAt), without walking a failing week.
CREATE INDEX delivery_minutes_delivered ON walgate.delivery_minutes (webhook_id, minute DESC) WHERE delivered > 0;
-- Retention removes old minutes by age.
CREATE INDEX delivery_minutes_by_minute ON walgate.delivery_minutes (minute);

-- Deliveries written delivered (the stream's history rows): counted per statement.
CREATE FUNCTION walgate.delivery_minutes_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO walgate.delivery_minutes AS m (webhook_id, minute, backend, delivered, last_delivered_at)
  SELECT webhook_id, date_trunc('minute', delivered_at), pg_backend_pid(), count(*), max(delivered_at)
    FROM inserted WHERE delivered_at IS NOT NULL
   GROUP BY 1, 2
  ON CONFLICT (webhook_id, minute, backend) DO UPDATE
     SET delivered = m.delivered + excluded.delivered,
         last_delivered_at = greatest(m.last_delivered_at, excluded.last_delivered_at);
  RETURN NULL;
END $$;
CREATE TRIGGER delivery_minutes_inserted AFTER INSERT ON walgate.deliveries
  REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION walgate.delivery_minutes_inserted();

-- A delivery of the retry queue delivered (its delivered_at set): counted per row (a column
-- trigger cannot see transition tables, and claims, which change other columns, must not pay).
CREATE FUNCTION walgate.delivery_minutes_delivered() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO walgate.delivery_minutes AS m (webhook_id, minute, backend, delivered, last_delivered_at)
  VALUES (NEW.webhook_id, date_trunc('minute', NEW.delivered_at), pg_backend_pid(), 1, NEW.delivered_at)
  ON CONFLICT (webhook_id, minute, backend) DO UPDATE
     SET delivered = m.delivered + 1, last_delivered_at = greatest(m.last_delivered_at, excluded.last_delivered_at);
  RETURN NULL;
END $$;
CREATE TRIGGER delivery_minutes_delivered AFTER UPDATE OF delivered_at ON walgate.deliveries
  FOR EACH ROW WHEN (NEW.delivered_at IS NOT NULL AND NEW.delivered_at IS DISTINCT FROM OLD.delivered_at)
  EXECUTE FUNCTION walgate.delivery_minutes_delivered();

-- Failed attempts, per statement.
CREATE FUNCTION walgate.delivery_minutes_failed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO walgate.delivery_minutes AS m (webhook_id, minute, backend, failed)
  SELECT d.webhook_id, date_trunc('minute', a.started_at), pg_backend_pid(), count(*)
    FROM inserted a JOIN walgate.deliveries d ON d.id = a.delivery_id
   WHERE (a.http_status IS NULL OR a.http_status NOT BETWEEN 200 AND 299) AND a.error IS DISTINCT FROM 'breaker open'
   GROUP BY 1, 2
  ON CONFLICT (webhook_id, minute, backend) DO UPDATE SET failed = m.failed + excluded.failed;
  RETURN NULL;
END $$;
CREATE TRIGGER delivery_minutes_failed AFTER INSERT ON walgate.delivery_attempts
  REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION walgate.delivery_minutes_failed();

-- What the history already holds: its deliveries, and the failed attempts of the last two hours.
INSERT INTO walgate.delivery_minutes (webhook_id, minute, backend, delivered, last_delivered_at)
SELECT webhook_id, date_trunc('minute', delivered_at), 0, count(*), max(delivered_at)
  FROM walgate.deliveries WHERE delivered_at IS NOT NULL GROUP BY 1, 2;
INSERT INTO walgate.delivery_minutes AS m (webhook_id, minute, backend, failed)
SELECT d.webhook_id, date_trunc('minute', a.started_at), 0, count(*)
  FROM walgate.delivery_attempts a JOIN walgate.deliveries d ON d.id = a.delivery_id
 WHERE a.started_at >= now() - interval '2 hours' AND (a.http_status IS NULL OR a.http_status NOT BETWEEN 200 AND 299)
 GROUP BY 1, 2
ON CONFLICT (webhook_id, minute, backend) DO UPDATE SET failed = m.failed + excluded.failed;
