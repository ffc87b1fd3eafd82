// A subscription's retry schedule, in SQL over its webhooks row `w`: its own (`retry.delaysMs`),
// else its environment's default (`webhookRetryDelaysMs` in the settings document); null: the
// platform's, WEBHOOK_RETRY_DELAYS_MS (the caller's config). Read with the subscription (targets)
// and with every claim of the retry queue, so a change of either applies to the next attempt.
export const RETRY_DELAYS_MS = `coalesce(w.retry_delays_ms,
  (SELECT ARRAY(SELECT jsonb_array_elements_text(e.settings -> 'webhookRetryDelaysMs')::int)
     FROM walgate.environments e
    WHERE e.project_id = w.project_id AND e.name = w.environment AND jsonb_typeof(e.settings -> 'webhookRetryDelaysMs') = 'array'))`;
