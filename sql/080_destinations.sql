-- Broker destinations (docs/destinations.md): a NATS JetStream or RabbitMQ server an environment's
-- subscriptions may publish to instead of POSTing to a URL. The credentials (username, password,
-- token) are sealed together with KEY_ENCRYPTION_KEY; `credential_names` says which are set, so
-- the view can tell without opening them.
CREATE TABLE walgate.destinations (
  id                text PRIMARY KEY,
  project_id        text NOT NULL,
  environment       text NOT NULL,
  name              text NOT NULL CHECK (name ~ '^[a-z0-9][a-z0-9_-]{0,62}$'),
  kind              text NOT NULL CHECK (kind IN ('nats', 'rabbitmq')),
  url               text NOT NULL,
  credentials       bytea,
  credential_names  text[] NOT NULL DEFAULT '{}',
  created_at        timestamptz NOT NULL DEFAULT now(),
  updated_at        timestamptz NOT NULL DEFAULT now(),
  UNIQUE (project_id, environment, name),
  FOREIGN KEY (project_id, environment) REFERENCES walgate.environments (project_id, name) ON DELETE CASCADE
);
CREATE INDEX destinations_listing ON walgate.destinations (project_id, environment, created_at DESC, id DESC);

-- A subscription to a destination: `url` holds its address (walgate-nats://… or walgate-amqp://…,
-- src/delivery/destinations/address.ts) so that the breaker, the retry queue and the stream need no
-- change; these columns keep what the subscriber sent, for its view and for re-resolving the
-- templates when its table changes. NO ACTION (not RESTRICT): the check runs at the end of the
-- statement, so an environment deleted with both its subscriptions and destinations still goes.
ALTER TABLE walgate.webhooks
  ADD COLUMN destination_id text REFERENCES walgate.destinations (id),
  ADD COLUMN destination_subject text,
  ADD COLUMN destination_exchange text,
  ADD COLUMN destination_routing_key text;
CREATE INDEX webhooks_by_destination ON walgate.webhooks (destination_id) WHERE destination_id IS NOT NULL;

-- A broker's acknowledgement has no HTTP status: an attempt without a status and without an error
-- succeeded (a network failure always has an error). The per-minute rollup of sql/015 counted
-- every attempt without a 2xx as failed; it now leaves these out.
CREATE OR REPLACE FUNCTION walgate.delivery_minutes_failed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO walgate.delivery_minutes AS m (webhook_id, minute, backend, failed)
  SELECT d.webhook_id, date_trunc('minute', a.started_at), pg_backend_pid(), count(*)
    FROM inserted a JOIN walgate.deliveries d ON d.id = a.delivery_id
   -- coalesce: without a status, BETWEEN is NULL, and NOT (NULL OR false) would drop a failure.
   WHERE NOT (coalesce(a.http_status BETWEEN 200 AND 299, false) OR (a.http_status IS NULL AND a.error IS NULL))
     AND a.error IS DISTINCT FROM 'breaker open'
   GROUP BY 1, 2
  ON CONFLICT (webhook_id, minute, backend) DO UPDATE SET failed = m.failed + excluded.failed;
  RETURN NULL;
END $$;
