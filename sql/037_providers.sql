-- Sign-in with identity providers (OpenID Connect and GitHub-style OAuth 2.0), issue 29.

-- An identity is one account at one provider (provider id + the provider's subject) that signs a
-- user in. A user may have several; one subject belongs to exactly one user of an environment.
CREATE TABLE walgate.identities (
  id               uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  user_id          uuid NOT NULL REFERENCES walgate.users (id) ON DELETE CASCADE,
  project_id       text NOT NULL,
  environment      text NOT NULL,
  provider         text NOT NULL,
  subject          text NOT NULL,
  -- what the provider said the address was when the identity was last used (shown, never trusted for linking later)
  email            text,
  created_at       timestamptz NOT NULL,
  last_sign_in_at  timestamptz NOT NULL,
  FOREIGN KEY (project_id, environment) REFERENCES walgate.environments (project_id, name) ON DELETE CASCADE,
  UNIQUE (project_id, environment, provider, subject)
);
CREATE INDEX identities_by_user ON walgate.identities (user_id);

-- A user created by a provider sign-in has no password of their own (the hash stored is of a
-- random secret nobody knows): removing their last identity would lock them out. A password
-- reset gives them one.
ALTER TABLE walgate.users ADD COLUMN has_password boolean NOT NULL DEFAULT true;

-- A sign-in on its way through the provider: found again by the hash of its `state`, used once
-- (the callback deletes it). The PKCE verifier walgate uses with the provider is sealed with
-- KEY_ENCRYPTION_KEY; `code_challenge` is the application's, checked when it exchanges the code.
CREATE TABLE walgate.provider_flows (
  state_hash      bytea PRIMARY KEY,
  project_id      text NOT NULL,
  environment     text NOT NULL,
  provider        text NOT NULL,
  redirect_to     text NOT NULL,
  code_challenge  text NOT NULL,
  nonce           text NOT NULL,
  code_verifier   bytea NOT NULL,
  created_at      timestamptz NOT NULL,
  expires_at      timestamptz NOT NULL,
  FOREIGN KEY (project_id, environment) REFERENCES walgate.environments (project_id, name) ON DELETE CASCADE
);
CREATE INDEX provider_flows_by_expiry ON walgate.provider_flows (expires_at);

-- The one-time code handed to the application after a provider sign-in (never tokens in a URL):
-- exchanged once, with the PKCE verifier of `code_challenge`, for a session.
CREATE TABLE walgate.provider_grants (
  code_hash       bytea PRIMARY KEY,
  user_id         uuid NOT NULL REFERENCES walgate.users (id) ON DELETE CASCADE,
  project_id      text NOT NULL,
  environment     text NOT NULL,
  provider        text NOT NULL,
  code_challenge  text NOT NULL,
  created_at      timestamptz NOT NULL,
  expires_at      timestamptz NOT NULL,
  used_at         timestamptz
);
CREATE INDEX provider_grants_by_expiry ON walgate.provider_grants (expires_at);
