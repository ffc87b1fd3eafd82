-- A subscription's throttle (docs/webhooks.md: Throttle): at most `rate_limit_per_second`
-- requests a second to its receiver, `rate_limit_burst` of them at once after a quiet spell
-- (default 1). Null: no throttle. The API checks the same bounds.
ALTER TABLE walgate.webhooks
  ADD COLUMN IF NOT EXISTS rate_limit_per_second double precision
    CHECK (rate_limit_per_second IS NULL OR (rate_limit_per_second >= 0.01 AND rate_limit_per_second <= 10000)),
  ADD COLUMN IF NOT EXISTS rate_limit_burst integer
    CHECK (rate_limit_burst IS NULL OR (rate_limit_burst BETWEEN 1 AND 10000));
