-- Users as operators need them: a disabled state and two metadata objects on the user; the audit
-- trail of auth state changes; the outbound mail that the courier sends.

-- A disabled user cannot log in or refresh, and their live access tokens are refused. The
-- metadata objects are bounded in the API (16 KB each); `user_metadata` is the user's own,
-- `app_metadata` is written by operators only and travels in access tokens.
ALTER TABLE walgate.users
  ADD COLUMN disabled_at   timestamptz,
  ADD COLUMN user_metadata jsonb NOT NULL DEFAULT '{}',
  ADD COLUMN app_metadata  jsonb NOT NULL DEFAULT '{}';
-- The admin list searches by e-mail prefix within an environment, newest first.
CREATE INDEX users_by_environment_email ON walgate.users (project_id, environment, email text_pattern_ops);
CREATE INDEX users_by_environment_created ON walgate.users (project_id, environment, created_at DESC, id DESC);

-- The audit trail: one row per auth state change, written in the transaction of the change. Rows
-- outlive their user (no foreign key to walgate.users): a deleted account keeps its history
-- until retention (AUTH_EVENTS_RETENTION_MS) removes it. The tailer captures this table from the
-- WAL, and a subscription on `_auth_events` in an environment receives that environment's rows.
CREATE TABLE walgate.auth_events (
  id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  -- the order of appends (times may tie, and ids are random): what pages and newest-first follow
  seq             bigint GENERATED ALWAYS AS IDENTITY,
  project_id      text NOT NULL,
  environment     text NOT NULL,
  type            text NOT NULL,
  user_id         uuid,
  session_id      uuid,
  -- the management token that acted, for admin actions
  actor           text,
  client_address  text,
  user_agent      text,
  details         jsonb NOT NULL DEFAULT '{}',
  created_at      timestamptz NOT NULL,
  FOREIGN KEY (project_id, environment) REFERENCES walgate.environments (project_id, name) ON DELETE CASCADE
);
CREATE INDEX auth_events_by_environment ON walgate.auth_events (project_id, environment, seq DESC);
CREATE INDEX auth_events_by_user ON walgate.auth_events (user_id, seq DESC);
CREATE INDEX auth_events_by_age ON walgate.auth_events (created_at);

DO $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_publication_tables WHERE pubname = 'walgate' AND schemaname = 'walgate' AND tablename = 'auth_events') THEN
    ALTER PUBLICATION walgate ADD TABLE walgate.auth_events;
  END IF;
END
$$;

-- Outbound e-mail, written in the transaction of the code it carries and sent by the courier of
-- any api process. The message (which holds the code) is sealed with KEY_ENCRYPTION_KEY and
-- dropped once sent. `next_attempt_at` is both the retry time and the lease of a claimed mail:
-- a courier that dies while sending leaves it due again when the lease ends.
CREATE TABLE walgate.mail_outbox (
  id               uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  project_id       text NOT NULL,
  environment      text NOT NULL,
  user_id          uuid REFERENCES walgate.users (id) ON DELETE CASCADE,
  purpose          text NOT NULL,
  recipient        text NOT NULL,
  message          bytea,
  state            text NOT NULL DEFAULT 'queued' CHECK (state IN ('queued', 'sent', 'dead')),
  attempts         integer NOT NULL DEFAULT 0,
  last_error       text,
  next_attempt_at  timestamptz NOT NULL DEFAULT now(),
  created_at       timestamptz NOT NULL DEFAULT now(),
  sent_at          timestamptz,
  FOREIGN KEY (project_id, environment) REFERENCES walgate.environments (project_id, name) ON DELETE CASCADE
);
CREATE INDEX mail_outbox_due ON walgate.mail_outbox (next_attempt_at) WHERE state = 'queued';
CREATE INDEX mail_outbox_by_user ON walgate.mail_outbox (user_id, created_at DESC);
CREATE INDEX mail_outbox_finished ON walgate.mail_outbox (created_at) WHERE state <> 'queued';
