// A subscription's throttle in SQL over its webhooks row `w`, as delivery reads it with the target
// and with every claim: `{perSecond, burst}` (burst 1 when not set), or null for none (throttle.ts).
export const RATE_LIMIT = `CASE WHEN w.rate_limit_per_second IS NULL THEN NULL
  ELSE json_build_object('perSecond', w.rate_limit_per_second, 'burst', coalesce(w.rate_limit_burst, 1)) END`;
