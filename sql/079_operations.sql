-- walgate's own operational events (docs/operations-events.md): a subscription on the pseudo-table
-- `_operations` of an environment receives that environment's rows, captured from the WAL like
-- `_auth_events` (src/tailer/feeds.ts). Each row is written by a trigger on the state it reports,
-- so it commits in the transaction of that change or not at all, whichever code path (the stream,
-- the retry queue, the API, the CLI, another process) made it.
CREATE TABLE walgate.operations (
  id               uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  seq              bigint GENERATED ALWAYS AS IDENTITY,
  project_id       text NOT NULL,
  environment      text NOT NULL,
  type             text NOT NULL CHECK (type IN ('subscription.disabled', 'delivery.dead', 'breaker.opened', 'breaker.closed',
                                                 'gap.recorded', 'problem.raised', 'problem.cleared', 'slot.lag')),
  subscription_id  text,
  delivery_id      text,
  details          jsonb NOT NULL DEFAULT '{}',
  created_at       timestamptz NOT NULL DEFAULT now(),
  FOREIGN KEY (project_id, environment) REFERENCES walgate.environments (project_id, name) ON DELETE CASCADE
);
CREATE INDEX operations_by_environment ON walgate.operations (project_id, environment, seq DESC);
CREATE INDEX operations_by_age ON walgate.operations (created_at);

DO $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_publication_tables WHERE pubname = 'walgate' AND schemaname = 'walgate' AND tablename = 'operations') THEN
    ALTER PUBLICATION walgate ADD TABLE walgate.operations;
  END IF;
END
$$;

-- Never about itself: an `_operations` subscription's own dead letters, disabling and problems are
-- not reported (to it or to anyone: an event about the channel that failed to carry events would
-- feed the failure), nor an endpoint's breaker when an `_operations` subscription of the
-- environment uses that URL.
CREATE FUNCTION walgate.operations_subscription(webhook text) RETURNS TABLE (project_id text, environment text)
LANGUAGE sql STABLE AS $$
  SELECT w.project_id, w.environment FROM walgate.webhooks w WHERE w.id = webhook AND w.table_name <> '_operations'
$$;

-- delivery.dead: a delivery that becomes dead (written dead by the stream, or updated to dead by
-- the retry queue). Only dead rows reach the function (the triggers' WHEN): nothing on the hot path.
CREATE FUNCTION walgate.operations_delivery_dead() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO walgate.operations (project_id, environment, type, subscription_id, delivery_id, details)
  SELECT s.project_id, s.environment, 'delivery.dead', NEW.webhook_id, NEW.id,
         jsonb_build_object('eventId', NEW.event_id, 'attempts', NEW.attempts, 'lastError', NEW.last_error, 'httpStatus', NEW.http_status)
    FROM walgate.operations_subscription(NEW.webhook_id) s;
  RETURN NULL;
END $$;
CREATE TRIGGER operations_delivery_dead_inserted AFTER INSERT ON walgate.deliveries
  FOR EACH ROW WHEN (NEW.status = 'dead') EXECUTE FUNCTION walgate.operations_delivery_dead();
CREATE TRIGGER operations_delivery_dead_updated AFTER UPDATE OF status ON walgate.deliveries
  FOR EACH ROW WHEN (NEW.status = 'dead' AND OLD.status <> 'dead') EXECUTE FUNCTION walgate.operations_delivery_dead();

-- subscription.disabled: active true → false, by delivery (a 410: disabled_reason set) or by an operator.
CREATE FUNCTION walgate.operations_subscription_disabled() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.table_name <> '_operations' THEN
    INSERT INTO walgate.operations (project_id, environment, type, subscription_id, details)
    VALUES (NEW.project_id, NEW.environment, 'subscription.disabled', NEW.id,
            jsonb_build_object('reason', coalesce(NEW.disabled_reason, 'operator'), 'url', NEW.url));
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER operations_subscription_disabled AFTER UPDATE OF active ON walgate.webhooks
  FOR EACH ROW WHEN (OLD.active AND NOT NEW.active) EXECUTE FUNCTION walgate.operations_subscription_disabled();

-- breaker.opened / breaker.closed: an endpoint's breaker going from closed to open (a failed
-- probe re-opening it is the same outage: not reported again), and from open to closed.
CREATE FUNCTION walgate.operations_breaker() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  kind text;
BEGIN
  IF NEW.opened_until IS NOT NULL AND (TG_OP = 'INSERT' OR OLD.opened_until IS NULL) THEN
    kind := 'breaker.opened';
  ELSIF TG_OP = 'UPDATE' AND OLD.opened_until IS NOT NULL AND NEW.opened_until IS NULL THEN
    kind := 'breaker.closed';
  ELSE
    RETURN NULL;
  END IF;
  IF EXISTS (SELECT 1 FROM walgate.webhooks w WHERE w.project_id = NEW.project_id AND w.environment = NEW.environment
                                               AND w.url = NEW.url AND w.table_name = '_operations') THEN
    RETURN NULL;
  END IF;
  INSERT INTO walgate.operations (project_id, environment, type, details)
  VALUES (NEW.project_id, NEW.environment, kind,
          jsonb_build_object('url', NEW.url, 'consecutiveFailures', NEW.consecutive_failures, 'openedUntil', NEW.opened_until));
  RETURN NULL;
END $$;
CREATE TRIGGER operations_breaker AFTER INSERT OR UPDATE OF opened_until ON walgate.endpoint_breakers
  FOR EACH ROW EXECUTE FUNCTION walgate.operations_breaker();

-- gap.recorded: the tailer recorded changes it could not read (tailer/gaps.ts).
CREATE FUNCTION walgate.operations_gap() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO walgate.operations (project_id, environment, type, details)
  VALUES (NEW.project_id, NEW.environment, 'gap.recorded',
          jsonb_build_object('gapId', NEW.id, 'reason', NEW.reason, 'fromTime', NEW.from_time, 'toTime', NEW.to_time,
                             'subscriptionIds', to_jsonb(NEW.webhook_ids)));
  RETURN NULL;
END $$;
CREATE TRIGGER operations_gap AFTER INSERT ON walgate.capture_gaps FOR EACH ROW EXECUTE FUNCTION walgate.operations_gap();

-- problem.raised / problem.cleared: what a subscription cannot follow any more (webhooks/problems.ts),
-- and its end. A subscription deleted takes its problems along (a cascade): not reported.
CREATE FUNCTION walgate.operations_problem() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  p walgate.webhook_problems;
BEGIN
  p := CASE WHEN TG_OP = 'INSERT' THEN NEW ELSE OLD END;
  INSERT INTO walgate.operations (project_id, environment, type, subscription_id, details)
  SELECT s.project_id, s.environment, CASE WHEN TG_OP = 'INSERT' THEN 'problem.raised' ELSE 'problem.cleared' END, p.webhook_id,
         jsonb_build_object('code', p.code, 'message', p.message)
    FROM walgate.operations_subscription(p.webhook_id) s;
  RETURN NULL;
END $$;
CREATE TRIGGER operations_problem AFTER INSERT OR DELETE ON walgate.webhook_problems
  FOR EACH ROW EXECUTE FUNCTION walgate.operations_problem();
