-- Custom request headers per subscription: the names in clear (the API shows them), the values
-- sealed together under KEY_ENCRYPTION_KEY (never returned, never logged).
ALTER TABLE walgate.webhooks
  ADD COLUMN header_names text[] NOT NULL DEFAULT '{}',
  ADD COLUMN header_values bytea;

-- What each delivery sent, kept on its own row (no extra row, nothing joined): the body, deflated
-- when that pays (payload_encoding 'deflate', else 'identity'), and the request headers without
-- the signatures. Null when WEBHOOK_KEEP_PAYLOADS is off or the delivery has not been attempted yet.
ALTER TABLE walgate.deliveries
  ADD COLUMN payload bytea,
  ADD COLUMN payload_encoding text,
  ADD COLUMN request_headers jsonb;
