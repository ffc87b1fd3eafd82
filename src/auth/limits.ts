import type { Context } from '../core/context.js';
import { DEFAULT_RATE_LIMITS, enforceRateLimit } from '../core/store/rate-limits.js';
import type { Environment } from '../projects/environments.js';
import type { LimitKey } from '../projects/settings.js';

// The auth endpoints' rate limits: each environment sets its own (settings `limits`), counted
// under keys of that environment, so one project's traffic never spends another's allowance.
// Limits given to the context (tests, load tests) win over the environment's.

/** Spends one point of the environment's `key` limit for `subject` (a client address or an e-mail), or throws 429. */
export async function spendLimit(ctx: Context, env: Environment, key: LimitKey, subject: string): Promise<void> {
  const policy = ctx.rateLimitOverrides[key] ?? { name: DEFAULT_RATE_LIMITS[key].name, ...env.settings.limits[key] };
  // Names hold no `:` and Postgres text no NUL; subjects join their parts with a space (no e-mail
  // address or client address has one).
  await enforceRateLimit(ctx.rateLimiter, policy, `${env.projectId}:${env.name}:${subject}`);
}
