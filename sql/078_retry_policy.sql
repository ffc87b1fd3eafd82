-- A subscription's own retry schedule (docs/webhooks.md: Retry policy): the waits before attempts
-- 1..n in ms, as many attempts as values (1-20, each at most a day, the first 0: a fresh change
-- goes at once). Null: the environment's default (its settings document, `webhookRetryDelaysMs`),
-- else WEBHOOK_RETRY_DELAYS_MS. The API checks the same bounds; the CHECK keeps any other writer
-- to them.
ALTER TABLE walgate.webhooks
  ADD COLUMN IF NOT EXISTS retry_delays_ms integer[]
    CHECK (retry_delays_ms IS NULL OR (cardinality(retry_delays_ms) BETWEEN 1 AND 20 AND retry_delays_ms[1] = 0
           AND 0 <= ALL (retry_delays_ms) AND 86400000 >= ALL (retry_delays_ms)));
