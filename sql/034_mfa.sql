-- Multi-factor authentication (issue 28): a user's second factors (TOTP secrets, passkeys), their
-- single-use recovery codes, the short-lived step between a right password and a second factor
-- (the mfaToken), and the WebAuthn challenges handed out and not yet answered.

-- One row per factor. A TOTP factor starts `pending` (enrolled, its first code not yet shown) and
-- becomes `active` when a code verifies; its secret is sealed with KEY_ENCRYPTION_KEY and
-- `last_step` is the last time step accepted, so each code (and every older one) works once.
-- A passkey is active from its registration; `counter` is the authenticator's signature counter.
CREATE TABLE walgate.mfa_factors (
  id             uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  user_id        uuid NOT NULL REFERENCES walgate.users (id) ON DELETE CASCADE,
  project_id     text NOT NULL,
  environment    text NOT NULL,
  type           text NOT NULL CHECK (type IN ('totp', 'webauthn')),
  status         text NOT NULL CHECK (status IN ('pending', 'active')),
  name           text,
  totp_secret    bytea,
  last_step      bigint,
  credential_id  text,
  public_key     bytea,
  counter        bigint,
  transports     text[],
  created_at     timestamptz NOT NULL,
  last_used_at   timestamptz,
  FOREIGN KEY (project_id, environment) REFERENCES walgate.environments (project_id, name) ON DELETE CASCADE,
  CHECK ((type = 'totp') = (totp_secret IS NOT NULL)),
  CHECK ((type = 'webauthn') = (credential_id IS NOT NULL AND public_key IS NOT NULL))
);
CREATE INDEX mfa_factors_by_user ON walgate.mfa_factors (user_id);
-- A passkey signs in without a user name: its credential id finds it within the environment.
CREATE UNIQUE INDEX mfa_factors_credential ON walgate.mfa_factors (project_id, environment, credential_id) WHERE credential_id IS NOT NULL;

-- Ten codes a set; a new set replaces the old. Stored as keyed hashes (secretbox mac), used once.
CREATE TABLE walgate.mfa_recovery_codes (
  user_id    uuid NOT NULL REFERENCES walgate.users (id) ON DELETE CASCADE,
  code_hash  bytea NOT NULL,
  used_at    timestamptz,
  created_at timestamptz NOT NULL,
  PRIMARY KEY (user_id, code_hash)
);

-- The step after a right password: 5 minutes, single use, 5 wrong codes end it. Stored hashed.
CREATE TABLE walgate.mfa_challenges (
  token_hash   bytea PRIMARY KEY,
  user_id      uuid NOT NULL REFERENCES walgate.users (id) ON DELETE CASCADE,
  project_id   text NOT NULL,
  environment  text NOT NULL,
  -- how the user got here (`pwd`, or `fed` for a provider sign-in): the session's amr starts with it
  amr          text[] NOT NULL,
  attempts     integer NOT NULL DEFAULT 0,
  expires_at   timestamptz NOT NULL,
  FOREIGN KEY (project_id, environment) REFERENCES walgate.environments (project_id, name) ON DELETE CASCADE
);
CREATE INDEX mfa_challenges_by_expiry ON walgate.mfa_challenges (expires_at);

-- WebAuthn challenges handed out by the options endpoints, each answered once (or never).
-- Registration challenges belong to the user who asked; sign-in ones to nobody yet.
CREATE TABLE walgate.webauthn_challenges (
  challenge    text PRIMARY KEY,
  purpose      text NOT NULL CHECK (purpose IN ('register', 'login')),
  user_id      uuid REFERENCES walgate.users (id) ON DELETE CASCADE,
  project_id   text NOT NULL,
  environment  text NOT NULL,
  expires_at   timestamptz NOT NULL,
  FOREIGN KEY (project_id, environment) REFERENCES walgate.environments (project_id, name) ON DELETE CASCADE
);
CREATE INDEX webauthn_challenges_by_expiry ON walgate.webauthn_challenges (expires_at);
