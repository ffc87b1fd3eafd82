-- Per-environment settings beyond the typed columns of 001 (limits, the absolute session
-- lifetime, CORS origins, and what later capabilities add), as one JSON document validated by the
-- settings schema in src/projects/settings.ts. Keys left out take the schema's defaults.
ALTER TABLE walgate.environments ADD COLUMN settings jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(settings) = 'object');

-- What a user sees of a session (GET /auth/sessions), and its absolute end besides the idle one.
ALTER TABLE walgate.sessions
  ADD COLUMN last_used_at        timestamptz,
  ADD COLUMN ip                  text,
  ADD COLUMN user_agent          text,
  ADD COLUMN absolute_expires_at timestamptz;
UPDATE walgate.sessions SET absolute_expires_at = expires_at WHERE absolute_expires_at IS NULL;
ALTER TABLE walgate.sessions ALTER COLUMN absolute_expires_at SET NOT NULL;

-- Codes are budgeted per code (its attempts) and per requesting client (rate limits), no longer
-- per user across codes: a stranger's guesses must not spend the owner's budget. The columns of
-- 004 stay for rollback; nothing reads them.
