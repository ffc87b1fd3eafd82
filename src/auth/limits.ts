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
  await enforceRateLimit(ctx.rateLimiter, policy, `${env.projectId}\0${env.name}\0${subject}`);
}
