-- Custom request headers per subscription: the names in clear (the API shows them), the values
-- sealed together under KEY_ENCRYPTION_KEY (never returned, never logged).
ALTER TABLE walgate.webhooks
  ADD COLUMN header_names text[] NOT NULL DEFAULT '{}',
  ADD COLUMN header_values bytea;

-- What each delivery sent, kept on its own row (no extra row): the body as sent, the request
-- headers without the signatures (custom header values masked), and the headers of the latest
-- answer. Text, not jsonb: written as is,
-- no parse on the delivery path; Postgres compresses a large body in place (TOAST). Null when
-- WEBHOOK_KEEP_PAYLOADS is off or the delivery has not been attempted yet.
ALTER TABLE walgate.deliveries
  ADD COLUMN payload text,
  ADD COLUMN request_headers json,
  ADD COLUMN response_headers json;
