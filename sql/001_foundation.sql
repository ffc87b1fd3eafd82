-- walgate's own tables live in the `walgate` schema. Projects' data tables live in each
-- environment's schema (environments.schema_name); the tailer watches those.
-- Times that decide security outcomes (expiry, lockout) are written from the application clock,
-- never from now(), so tests can move time.

CREATE TABLE walgate.projects (
  id          text PRIMARY KEY CHECK (id ~ '^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$'),
  created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE walgate.environments (
  project_id                text NOT NULL REFERENCES walgate.projects (id) ON DELETE CASCADE,
  name                      text NOT NULL CHECK (name ~ '^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$'),
  schema_name               text NOT NULL CHECK (schema_name <> 'walgate'),
  auth_enabled              boolean NOT NULL DEFAULT true,
  token_format              text NOT NULL DEFAULT 'jws' CHECK (token_format IN ('jws', 'jwe')),
  signing_alg               text NOT NULL DEFAULT 'ES256' CHECK (signing_alg IN ('ES256', 'RS256', 'EdDSA')),
  -- the `dir` A256GCM key for JWE access tokens, encrypted with KEY_ENCRYPTION_KEY; never published
  jwe_key                   bytea,
  access_token_ttl_seconds  integer NOT NULL DEFAULT 900 CHECK (access_token_ttl_seconds > 0),
  refresh_token_ttl_seconds integer NOT NULL DEFAULT 2592000 CHECK (refresh_token_ttl_seconds > 0),
  code_ttl_seconds          integer NOT NULL DEFAULT 600 CHECK (code_ttl_seconds > 0),
  code_max_attempts         integer NOT NULL DEFAULT 5 CHECK (code_max_attempts > 0),
  lockout_threshold         integer NOT NULL DEFAULT 5 CHECK (lockout_threshold > 0),
  lockout_seconds           integer NOT NULL DEFAULT 900 CHECK (lockout_seconds > 0),
  created_at                timestamptz NOT NULL DEFAULT now(),
  updated_at                timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (project_id, name)
);

CREATE TABLE walgate.users (
  id                 uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  project_id         text NOT NULL,
  environment        text NOT NULL,
  email              text NOT NULL CHECK (email = lower(email)),
  name               text,
  password_hash      text NOT NULL,
  email_verified_at  timestamptz,
  failed_logins      integer NOT NULL DEFAULT 0,
  locked_until       timestamptz,
  created_at         timestamptz NOT NULL,
  updated_at         timestamptz NOT NULL,
  FOREIGN KEY (project_id, environment) REFERENCES walgate.environments (project_id, name) ON DELETE CASCADE,
  UNIQUE (project_id, environment, email)
);

-- One live code per user and purpose: issuing a new one replaces the row.
CREATE TABLE walgate.verification_codes (
  user_id     uuid NOT NULL REFERENCES walgate.users (id) ON DELETE CASCADE,
  purpose     text NOT NULL CHECK (purpose IN ('signup', 'recovery')),
  code_hash   bytea NOT NULL,
  attempts    integer NOT NULL DEFAULT 0,
  expires_at  timestamptz NOT NULL,
  created_at  timestamptz NOT NULL,
  PRIMARY KEY (user_id, purpose)
);

-- A session is one login: its id is the access tokens' `sid` and it owns a family of refresh tokens.
CREATE TABLE walgate.sessions (
  id              uuid PRIMARY KEY,
  user_id         uuid NOT NULL REFERENCES walgate.users (id) ON DELETE CASCADE,
  project_id      text NOT NULL,
  environment     text NOT NULL,
  created_at      timestamptz NOT NULL,
  expires_at      timestamptz NOT NULL,
  revoked_at      timestamptz,
  revoked_reason  text
);
CREATE INDEX sessions_live_by_user ON walgate.sessions (user_id) WHERE revoked_at IS NULL;

CREATE TABLE walgate.refresh_tokens (
  token_hash  bytea PRIMARY KEY,
  session_id  uuid NOT NULL REFERENCES walgate.sessions (id) ON DELETE CASCADE,
  issued_at   timestamptz NOT NULL,
  expires_at  timestamptz NOT NULL,
  used_at     timestamptz
);
CREATE INDEX refresh_tokens_by_session ON walgate.refresh_tokens (session_id);

-- The Postgres implementation of the revocation list (Redis keeps the same entries with a TTL).
CREATE TABLE walgate.revoked_sessions (
  session_id  uuid PRIMARY KEY,
  expires_at  timestamptz NOT NULL
);
CREATE INDEX revoked_sessions_expiry ON walgate.revoked_sessions (expires_at);

-- The Postgres implementation of rate limits (rate-limiter-flexible's RateLimiterPostgres layout).
CREATE TABLE walgate.rate_limits (
  key     varchar(255) PRIMARY KEY,
  points  integer NOT NULL DEFAULT 0,
  expire  bigint
);

-- Signing keys per environment. `next` is published before it signs; `retired` stays published
-- until publish_until, when the last token it signed has expired.
CREATE TABLE walgate.signing_keys (
  kid            text PRIMARY KEY,
  project_id     text NOT NULL,
  environment    text NOT NULL,
  alg            text NOT NULL CHECK (alg IN ('ES256', 'RS256', 'EdDSA')),
  public_jwk     jsonb NOT NULL,
  private_key    bytea NOT NULL,
  state          text NOT NULL CHECK (state IN ('next', 'active', 'retired')),
  created_at     timestamptz NOT NULL,
  activated_at   timestamptz,
  retired_at     timestamptz,
  publish_until  timestamptz,
  FOREIGN KEY (project_id, environment) REFERENCES walgate.environments (project_id, name) ON DELETE CASCADE
);
CREATE UNIQUE INDEX signing_keys_one_active ON walgate.signing_keys (project_id, environment) WHERE state = 'active';
CREATE UNIQUE INDEX signing_keys_one_next ON walgate.signing_keys (project_id, environment) WHERE state = 'next';

CREATE TABLE walgate.management_tokens (
  id            text PRIMARY KEY,
  project_id    text NOT NULL REFERENCES walgate.projects (id) ON DELETE CASCADE,
  name          text,
  token_hash    bytea NOT NULL UNIQUE,
  created_at    timestamptz NOT NULL DEFAULT now(),
  last_used_at  timestamptz,
  revoked_at    timestamptz
);

CREATE TABLE walgate.webhooks (
  id             text PRIMARY KEY,
  project_id     text NOT NULL,
  environment    text NOT NULL,
  schema_name    text NOT NULL,
  table_name     text NOT NULL,
  events         text[] NOT NULL,
  url            text NOT NULL,
  secret         bytea NOT NULL,
  active         boolean NOT NULL DEFAULT true,
  filter         jsonb,
  select_fields  text[],
  created_at     timestamptz NOT NULL DEFAULT now(),
  updated_at     timestamptz NOT NULL DEFAULT now(),
  FOREIGN KEY (project_id, environment) REFERENCES walgate.environments (project_id, name) ON DELETE CASCADE
);
CREATE INDEX webhooks_listing ON walgate.webhooks (project_id, environment, created_at DESC, id DESC);
-- The tailer learns of subscription changes from the WAL, in order with the data changes, so a
-- subscription created or paused takes effect exactly at its commit. FULL: deletes carry the row.
ALTER TABLE walgate.webhooks REPLICA IDENTITY FULL;

-- One row per change that some subscription takes: its images as to_jsonb renders each value
-- (one JSON fragment per column), written once however many subscriptions take it.
CREATE TABLE walgate.events (
  id              text PRIMARY KEY,                   -- evt_<commit LSN>_<index in transaction>
  schema_name     text NOT NULL,
  table_name      text NOT NULL,
  operation       text NOT NULL CHECK (operation IN ('INSERT', 'UPDATE', 'DELETE')),
  committed_at    timestamptz NOT NULL,
  columns         text[] NOT NULL,
  record          text[] NOT NULL,
  old_record      text[],
  changed_fields  text[] NOT NULL
);

-- One row per (subscription, event): where its delivery stands. The id is made of the event id
-- and the subscription id, so it is unique per pair. The body is rendered from the event, the
-- subscription and select_fields (the subscription's `select` when the change was matched), the
-- same bytes on every attempt. next_attempt_at doubles as the claim: a worker that takes a
-- delivery moves it to the end of its lease, so a delivery whose worker died comes due again.
CREATE TABLE walgate.deliveries (
  id                  text PRIMARY KEY,
  webhook_id          text NOT NULL REFERENCES walgate.webhooks (id) ON DELETE CASCADE,
  event_id            text NOT NULL,
  event_type          text NOT NULL CHECK (event_type IN ('INSERT', 'UPDATE', 'DELETE')),
  select_fields       text[],
  status              text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'retrying', 'delivered', 'dead')),
  attempts            integer NOT NULL DEFAULT 0,
  http_status         integer,
  last_error          text,
  next_attempt_at     timestamptz NOT NULL,
  created_at          timestamptz NOT NULL,
  delivered_at        timestamptz
);
CREATE INDEX deliveries_due ON walgate.deliveries (next_attempt_at) WHERE status IN ('pending', 'retrying');
CREATE INDEX deliveries_recent ON walgate.deliveries (webhook_id, created_at DESC, id DESC);
CREATE INDEX deliveries_dead ON walgate.deliveries (webhook_id, created_at) WHERE status = 'dead';

-- Every attempt, kept across replays (a replay starts the attempt count again at 1).
CREATE TABLE walgate.delivery_attempts (
  id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  delivery_id  text NOT NULL REFERENCES walgate.deliveries (id) ON DELETE CASCADE,
  attempt      integer NOT NULL,
  started_at   timestamptz NOT NULL,
  duration_ms  integer NOT NULL,
  http_status  integer,
  error        text
);
CREATE INDEX delivery_attempts_by_delivery ON walgate.delivery_attempts (delivery_id, id);

-- Circuit breakers per endpoint origin, shared by every tailer process and kept across restarts.
CREATE TABLE walgate.endpoint_breakers (
  origin                text PRIMARY KEY,
  consecutive_failures  integer NOT NULL DEFAULT 0,
  opened_until          timestamptz,
  -- Once the cool-down is over, one process at a time may send a probe, until this time.
  probe_until           timestamptz,
  updated_at            timestamptz NOT NULL DEFAULT now()
);

-- Where the tailer stands: the end LSN of the last transaction whose deliveries are committed,
-- written in the same transaction as those deliveries. The slot is acknowledged only up to here.
CREATE TABLE walgate.tailer_state (
  slot_name      text PRIMARY KEY,
  processed_lsn  pg_lsn NOT NULL,
  updated_at     timestamptz NOT NULL DEFAULT now()
);

-- The subscriptions as the tailer saw them at processed_lsn: after a restart it resumes with the
-- view that matches the WAL position it resumes from, not with today's settings.
CREATE TABLE walgate.tailer_subscriptions (
  webhook_id  text PRIMARY KEY,
  spec        jsonb NOT NULL
);
