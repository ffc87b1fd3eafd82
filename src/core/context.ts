import { Redis } from 'ioredis';
import { systemClock, type Clock } from './clock.js';
import type { Config } from './config.js';
import { loadKeyEncryptionKey } from './crypto/key-file.js';
import { SecretBox } from './crypto/secretbox.js';
import { createPool, type Pool } from './db/pool.js';
import { createLogger, type Logger } from './log.js';
import { systemLookup, type HostLookup } from './net/address-policy.js';
import { Metrics } from './metrics.js';
import { devMailbox, smtpMailer, type Mailer } from './mail/mailer.js';
import { Courier } from './mail/courier.js';
import { DEFAULT_RATE_LIMITS, SharedRateLimiter, type RateLimiter, type RateLimitSettings } from './store/rate-limits.js';
import { PostgresRevocationStore, RedisRevocationStore, type RevocationStore } from './store/revocations.js';

/**
 * Everything a request or a worker needs, built once at start and passed down. There are no
 * module-level singletons: a test builds its own context with its own database, clock and mailer.
 */
export interface Context {
  config: Config;
  pool: Pool;
  log: Logger;
  clock: Clock;
  secrets: SecretBox;
  redis: Redis | undefined;
  revocations: RevocationStore;
  rateLimiter: RateLimiter;
  rateLimits: RateLimitSettings;
  /** Limits given at construction (tests, load tests): they win over each environment's own. */
  rateLimitOverrides: Partial<RateLimitSettings>;
  mailer: Mailer;
  /** Sends the e-mails of walgate.mail_outbox (started by the api daemon). */
  courier: Courier;
  metrics: Metrics;
  /** How subscriber host names are resolved, when a subscription is checked and when a delivery connects. */
  lookup: HostLookup;
  /** How long per-environment settings and keys may be served from memory. */
  cacheTtlMs: number;
  /**
   * A pool of its own for one use, opened on first ask and ended with the context; `options` are
   * its connections' startup settings (`-c name=value …`), fixed for their lifetime.
   */
  sidePool(name: string, options: string): Pool;
  close(): Promise<void>;
}

export interface ContextOverrides {
  clock?: Clock;
  log?: Logger;
  mailer?: Mailer;
  metrics?: Metrics;
  cacheTtlMs?: number;
  poolMax?: number;
  rateLimits?: Partial<RateLimitSettings>;
  /** Prefix of every Redis key; lets tests (or deployments) share a Redis without colliding. */
  redisPrefix?: string;
  applicationName?: string;
  /** A resolver for subscriber host names (tests rebind names through it). */
  lookup?: HostLookup;
}

/**
 * A Redis client that fails fast: no offline queue and a short command time-out, so a request
 * gets a 503 while Redis is away instead of waiting for it to come back.
 */
export function createRedis(url: string): Redis {
  const redis = new Redis(url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    commandTimeout: 2000,
    connectTimeout: 2000,
    lazyConnect: false,
    retryStrategy: (times) => Math.min(times * 200, 2000),
    // The commands of one turn of the event loop (every protected request's revocation check, the
    // limiters' counters) leave as one pipeline: one write and one read of the socket for many.
    enableAutoPipelining: true,
  });
  redis.on('error', () => {
    /* reported through failed commands; reconnection is automatic */
  });
  return redis;
}

export async function createContext(config: Config, databaseUrl: string, overrides: ContextOverrides = {}): Promise<Context> {
  const log = overrides.log ?? createLogger(config.logLevel);
  const clock = overrides.clock ?? systemClock;
  const pool = createPool(databaseUrl, { max: overrides.poolMax ?? 20, applicationName: overrides.applicationName });
  const secrets = new SecretBox(await loadKeyEncryptionKey(config, log));
  const redisPrefix = overrides.redisPrefix ?? 'walgate:';
  const redis = config.redisUrl ? createRedis(config.redisUrl) : undefined;
  const mailer =
    overrides.mailer ??
    (config.smtpUrl
      ? smtpMailer(config.smtpUrl, config.mailFrom)
      : devMailbox(config.dataDir, config.mailFrom, log, config.env === 'production'));
  const sidePools = new Map<string, Pool>();
  const courier = new Courier(pool, secrets, mailer, log, {
    concurrency: config.mail.courierConcurrency,
    maxAttempts: config.mail.maxAttempts,
    retryMaxDelayMs: config.mail.retryMaxDelayMs,
    leaseMs: config.mail.sendLeaseMs,
  });
  return {
    config,
    pool,
    log,
    clock,
    secrets,
    redis,
    revocations: redis ? new RedisRevocationStore(redis, clock, `${redisPrefix}revoked:`) : new PostgresRevocationStore(pool, clock),
    rateLimiter: new SharedRateLimiter(redis ? { kind: 'redis', redis } : { kind: 'postgres', pool }, redisPrefix),
    rateLimits: { ...DEFAULT_RATE_LIMITS, ...overrides.rateLimits },
    rateLimitOverrides: overrides.rateLimits ?? {},
    mailer,
    courier,
    metrics: overrides.metrics ?? new Metrics(),
    lookup: overrides.lookup ?? systemLookup,
    cacheTtlMs: overrides.cacheTtlMs ?? 5000,
    sidePool(name, options) {
      let side = sidePools.get(name);
      if (!side) {
        side = createPool(databaseUrl, { max: 10, applicationName: `${overrides.applicationName ?? 'walgate'} ${name}`, options });
        sidePools.set(name, side);
      }
      return side;
    },
    async close() {
      await courier.stop();
      mailer.close();
      redis?.disconnect();
      await Promise.all([...sidePools.values()].map((p) => p.end()));
      await pool.end();
    },
  };
}
