-- How the user proved who they are when the session began (RFC 8176 method references), copied
-- into every access token of the session as `amr`, with the assurance level `aal` derived from it.
-- Sessions that exist already began with a password.
ALTER TABLE walgate.sessions ADD COLUMN IF NOT EXISTS amr text[] NOT NULL DEFAULT '{pwd}';
