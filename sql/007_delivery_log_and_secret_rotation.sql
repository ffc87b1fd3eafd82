-- The delivery log shows what a receiver answered: the first KiB of each attempt's response body.
ALTER TABLE walgate.delivery_attempts ADD COLUMN response_body text;

-- Secret rotation without a gap: after a PATCH of `secret`, the previous one (sealed like the
-- current one) still signs until previous_secret_until, so receivers can switch at their pace.
ALTER TABLE walgate.webhooks ADD COLUMN previous_secret bytea, ADD COLUMN previous_secret_until timestamptz;
