-- Passwordless sign-in (docs/passwordless.md): an e-mailed 6-digit code is a verification code of
-- its own purpose (same table, same attempt budget, one live code per user), and a magic link is
-- a single-use 256-bit token, stored hashed, one live link per user (a new one replaces it).
ALTER TABLE walgate.verification_codes DROP CONSTRAINT verification_codes_purpose_check;
ALTER TABLE walgate.verification_codes ADD CONSTRAINT verification_codes_purpose_check
  CHECK (purpose IN ('signup', 'recovery', 'otp'));

CREATE TABLE walgate.magic_links (
  user_id      uuid PRIMARY KEY REFERENCES walgate.users (id) ON DELETE CASCADE,
  token_hash   bytea NOT NULL UNIQUE,
  -- where the link sends the browser: one of the environment's allowed URLs when it was asked for
  redirect_to  text NOT NULL,
  expires_at   timestamptz NOT NULL,
  created_at   timestamptz NOT NULL
);
