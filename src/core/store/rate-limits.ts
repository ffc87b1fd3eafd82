import type { Redis } from 'ioredis';
import { RateLimiterMemory, RateLimiterPostgres, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { Pool } from '../db/pool.js';
import { rateLimited } from '../errors.js';

export interface RateLimitPolicy {
  /** Stable name; part of the stored key, so two policies never share a counter. */
  name: string;
  points: number;
  durationSeconds: number;
}

/** The platform's limits (the seed's defaults); tests may pass others through the context. */
export interface RateLimitSettings {
  signup: RateLimitPolicy;
  login: RateLimitPolicy;
  recoverPassword: RateLimitPolicy;
  /** Code checks: per client IP and per e-mail, so neither many addresses nor many clients multiply guesses. */
  confirmSignupPerIp: RateLimitPolicy;
  confirmSignupPerEmail: RateLimitPolicy;
  resetPasswordPerIp: RateLimitPolicy;
  resetPasswordPerEmail: RateLimitPolicy;
  management: RateLimitPolicy;
  /** recover-password and resend-confirmation per client address, besides per e-mail. */
  recoverPasswordPerIp: RateLimitPolicy;
  refreshTokenPerIp: RateLimitPolicy;
  /** Provider sign-ins started (each writes a flow row) and codes exchanged, per client address. */
  providerSignInPerIp: RateLimitPolicy;
  /** Second-factor guesses (mfa challenge): per client address, and per user whoever asks. */
  mfaChallengePerIp: RateLimitPolicy;
  mfaChallengePerUser: RateLimitPolicy;
  /** Passkey sign-in (options and verify) per client address. */
  passkeyLoginPerIp: RateLimitPolicy;
}

export const DEFAULT_RATE_LIMITS: RateLimitSettings = {
  signup: { name: 'signup', points: 10, durationSeconds: 60 },
  login: { name: 'login', points: 20, durationSeconds: 60 },
  recoverPassword: { name: 'recover-password', points: 5, durationSeconds: 60 },
  confirmSignupPerIp: { name: 'confirm-signup-ip', points: 20, durationSeconds: 60 },
  confirmSignupPerEmail: { name: 'confirm-signup-email', points: 10, durationSeconds: 60 },
  resetPasswordPerIp: { name: 'reset-password-ip', points: 20, durationSeconds: 60 },
  resetPasswordPerEmail: { name: 'reset-password-email', points: 10, durationSeconds: 60 },
  management: { name: 'management', points: 600, durationSeconds: 60 },
  recoverPasswordPerIp: { name: 'recover-password-ip', points: 20, durationSeconds: 60 },
  refreshTokenPerIp: { name: 'refresh-token-ip', points: 300, durationSeconds: 60 },
  providerSignInPerIp: { name: 'provider-sign-in-ip', points: 60, durationSeconds: 60 },
  mfaChallengePerIp: { name: 'mfa-challenge-ip', points: 20, durationSeconds: 60 },
  mfaChallengePerUser: { name: 'mfa-challenge-user', points: 10, durationSeconds: 60 },
  passkeyLoginPerIp: { name: 'passkey-login-ip', points: 60, durationSeconds: 60 },
};

export type RateLimitDecision = { allowed: true } | { allowed: false; retryAfterSeconds: number };

/**
 * Fixed-window counters shared by every api instance (Redis, or Postgres without Redis), so a
 * limit holds across the fleet. When the shared store fails, each process falls back to its own
 * in-memory counter: limits get looser for a while instead of every request failing.
 */
export interface RateLimiter {
  consume(policy: RateLimitPolicy, key: string): Promise<RateLimitDecision>;
}

/** Spends one point of `policy` for `key`, or throws 429 RATE_LIMIT_EXCEEDED with Retry-After. */
export async function enforceRateLimit(limiter: RateLimiter, policy: RateLimitPolicy, key: string): Promise<void> {
  const decision = await limiter.consume(policy, key);
  if (!decision.allowed) throw rateLimited(decision.retryAfterSeconds);
}

type Backend = { kind: 'redis'; redis: Redis } | { kind: 'postgres'; pool: Pool };

export class SharedRateLimiter implements RateLimiter {
  readonly #limiters = new Map<string, RateLimiterAbstract>();

  constructor(
    private readonly backend: Backend,
    /** Namespaces Redis keys, so several deployments (or test runs) can share one Redis. */
    private readonly prefix = 'walgate:',
  ) {}

  async consume(policy: RateLimitPolicy, key: string): Promise<RateLimitDecision> {
    try {
      await this.limiterFor(policy).consume(key);
      return { allowed: true };
    } catch (rejection) {
      if (rejection instanceof RateLimiterRes) {
        return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil(rejection.msBeforeNext / 1000)) };
      }
      throw rejection;
    }
  }

  private limiterFor(policy: RateLimitPolicy): RateLimiterAbstract {
    const id = `${policy.name}:${policy.points}:${policy.durationSeconds}`;
    let limiter = this.#limiters.get(id);
    if (!limiter) {
      const common = {
        keyPrefix: `${this.prefix}rl:${policy.name}`,
        points: policy.points,
        duration: policy.durationSeconds,
        insuranceLimiter: new RateLimiterMemory({ points: policy.points, duration: policy.durationSeconds }),
      };
      limiter =
        this.backend.kind === 'redis'
          ? new RateLimiterRedis({ ...common, storeClient: this.backend.redis })
          : new RateLimiterPostgres({
              ...common,
              storeClient: this.backend.pool,
              storeType: 'pool',
              schemaName: 'walgate',
              tableName: 'rate_limits',
              tableCreated: true, // by sql/001_foundation.sql
              clearExpiredByTimeout: true,
            });
      this.#limiters.set(id, limiter);
    }
    return limiter;
  }
}
