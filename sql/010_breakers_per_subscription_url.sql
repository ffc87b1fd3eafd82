-- Circuit breakers per (project, environment, exact subscription URL), no longer per origin: one
-- tenant's failing path on a shared host must not pause another path there, nor another tenant's
-- subscription to the same URL. The old rows were keyed by origin and cannot be split: they are
-- dropped (at worst one extra probe's worth of requests per endpoint after the upgrade).
DROP TABLE walgate.endpoint_breakers;
CREATE TABLE walgate.endpoint_breakers (
  project_id            text NOT NULL,
  environment           text NOT NULL,
  url                   text NOT NULL,
  consecutive_failures  integer NOT NULL DEFAULT 0,
  opened_until          timestamptz,
  -- Once the cool-down is over, one process at a time may send a probe, until this time.
  probe_until           timestamptz,
  updated_at            timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (project_id, environment, url),
  FOREIGN KEY (project_id, environment) REFERENCES walgate.environments (project_id, name) ON DELETE CASCADE
);

-- A receiver that answers 410 Gone disables its subscription (Standard Webhooks): why and when.
ALTER TABLE walgate.webhooks ADD COLUMN disabled_reason text, ADD COLUMN disabled_at timestamptz;
