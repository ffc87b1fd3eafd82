-- Organizations of an environment's users (src/auth/organizations/): the organization, its members
-- with a role, and invitations by e-mail. A deleted organization keeps its row (deleted_at) for the
-- audit trail; its members and invitations stop counting at once.
CREATE TABLE walgate.organizations (
  id           uuid PRIMARY KEY,
  project_id   text NOT NULL,
  environment  text NOT NULL,
  name         text NOT NULL,
  created_at   timestamptz NOT NULL,
  updated_at   timestamptz NOT NULL,
  deleted_at   timestamptz,
  FOREIGN KEY (project_id, environment) REFERENCES walgate.environments (project_id, name) ON DELETE CASCADE
);
CREATE INDEX organizations_live_by_environment ON walgate.organizations (project_id, environment, created_at DESC, id)
  WHERE deleted_at IS NULL;

-- A membership's id is what an access token carrying the organization names (`org_mid`): removing
-- the member puts that id on the revocation list, and a member who joins again gets a new one.
CREATE TABLE walgate.organization_members (
  id               uuid PRIMARY KEY,
  organization_id  uuid NOT NULL REFERENCES walgate.organizations (id) ON DELETE CASCADE,
  user_id          uuid NOT NULL REFERENCES walgate.users (id) ON DELETE CASCADE,
  role             text NOT NULL,
  created_at       timestamptz NOT NULL,
  updated_at       timestamptz NOT NULL,
  UNIQUE (organization_id, user_id)
);
CREATE INDEX organization_members_by_user ON walgate.organization_members (user_id);

-- An invitation's token is stored hashed (SHA-256 of 256 random bits, like refresh tokens); it is
-- bound to the address it was sent to and taken once (accepted_at), unless revoked or expired.
CREATE TABLE walgate.organization_invitations (
  id               uuid PRIMARY KEY,
  organization_id  uuid NOT NULL REFERENCES walgate.organizations (id) ON DELETE CASCADE,
  email            text NOT NULL CHECK (email = lower(email)),
  role             text NOT NULL,
  token_hash       bytea NOT NULL UNIQUE,
  invited_by       uuid,
  created_at       timestamptz NOT NULL,
  expires_at       timestamptz NOT NULL,
  accepted_at      timestamptz,
  accepted_by      uuid,
  revoked_at       timestamptz
);
-- Listing an organization's invitations, and counting the last hour's (the per-hour limit).
CREATE INDEX organization_invitations_by_organization ON walgate.organization_invitations (organization_id, created_at DESC);

-- The organization a session has switched to (POST /auth/organizations/active): each refresh puts
-- it in the access token again, as the membership then stands.
ALTER TABLE walgate.sessions ADD COLUMN active_organization_id uuid;
