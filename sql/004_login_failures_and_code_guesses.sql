-- Failed logins, counted per account *and* client (src/auth/lockout.ts). One row per (account,
-- client) and one per account with client '' (every client together): a client that has failed
-- too often is locked out of that account, while the others still log in until the much higher
-- account-wide count is reached. `account` is an HMAC of project, environment and e-mail, so an
-- unknown address is counted (and locked) exactly like a known one, and no address is stored.
-- walgate.users.failed_logins and locked_until are no longer written.
CREATE TABLE walgate.login_failures (
  account       bytea NOT NULL,
  client        text NOT NULL,
  failures      integer NOT NULL DEFAULT 0,
  locked_until  timestamptz,
  updated_at    timestamptz NOT NULL,
  PRIMARY KEY (account, client)
);
CREATE INDEX login_failures_by_age ON walgate.login_failures (updated_at);

-- Wrong guesses of a user's codes for one purpose, across codes (a new code used to reset the
-- only count there was): `guesses` since `guesses_since`, kept when a new code replaces the row.
ALTER TABLE walgate.verification_codes
  ADD COLUMN guesses integer NOT NULL DEFAULT 0,
  ADD COLUMN guesses_since timestamptz;
