import { z } from 'zod';

// Every environment variable walgate reads is declared here, parsed once at start.
// A bad value stops the process with a message that names the variable.

const bool = z.enum(['true', 'false', '1', '0', 'yes', 'no']).transform((v) => v === 'true' || v === '1' || v === 'yes');

const port = z.coerce.number().int().min(0).max(65535);

const positiveMs = z.coerce.number().int().min(0);

const DAY_MS = 24 * 60 * 60 * 1000;
// A retention window shorter than a second would prune history before anyone could read it.
const retentionMs = z.coerce.number().int().min(1000);

const retryDelays = z.string().transform((s, ctx) => {
  const parts = s.split(',').map((p) => p.trim());
  const delays = parts.map(Number);
  if (parts.length === 0 || delays.some((d) => !Number.isInteger(d) || d < 0)) {
    ctx.addIssue({ code: 'custom', message: 'expected comma-separated non-negative integers (milliseconds)' });
    return z.NEVER;
  }
  return delays;
});

const url = (protocols: string[]) =>
  z.string().refine(
    (s) => {
      try {
        return protocols.includes(new URL(s).protocol);
      } catch {
        return false;
      }
    },
    { message: `expected a URL (${protocols.join(' or ')})` },
  );

const base64Key = z.string().refine((s) => Buffer.from(s, 'base64').length === 32, {
  message: 'expected 32 bytes, base64-encoded (e.g. `openssl rand -base64 32`)',
});

const schema = z.object({
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
  PORT: port.default(3000),
  HOST: z.string().min(1).default('127.0.0.1'),
  API_HEADERS_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(10_000),
  API_REQUEST_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(30_000),
  DATABASE_URL: url(['postgres:', 'postgresql:']).optional(),
  DATA_DIR: z.string().min(1).default('.data'),
  REDIS_URL: url(['redis:', 'rediss:']).optional(),
  SMTP_URL: url(['smtp:', 'smtps:']).optional(),
  MAIL_FROM: z.string().min(1).default('walgate <no-reply@localhost>'),
  PUBLIC_URL: url(['http:', 'https:']).optional(),
  TRUST_PROXY: z.string().optional(),
  KEY_ENCRYPTION_KEY: base64Key.optional(),
  WEBHOOK_ALLOW_PRIVATE_NETWORKS: bool.default(false),
  WEBHOOK_RETRY_DELAYS_MS: retryDelays.default([0, 1000, 5000, 30000, 300000]),
  WEBHOOK_BREAKER_FAILURES: z.coerce.number().int().min(1).default(5),
  WEBHOOK_BREAKER_COOLDOWN_MS: positiveMs.default(120000),
  WEBHOOK_BREAKER_MAX_WAIT_MS: positiveMs.optional(),
  WEBHOOK_TIMEOUT_MS: z.coerce.number().int().min(1).default(10000),
  WEBHOOK_PARK_AFTER_MS: positiveMs.default(60000),
  WEBHOOK_RETENTION_MS: retentionMs.default(7 * DAY_MS),
  WEBHOOK_DEAD_RETENTION_MS: retentionMs.default(30 * DAY_MS),
  WEBHOOK_SECRET_GRACE_MS: positiveMs.default(86_400_000),
  WEBHOOK_ENDPOINT_CONCURRENCY: z.coerce.number().int().min(1).max(1024).default(16),
  WEBHOOK_ENDPOINT_CONCURRENCY_MAX: z.coerce.number().int().min(1).max(1024).default(64),
  WEBHOOK_PAUSED_BACKLOG_MS: positiveMs.default(3 * DAY_MS),
  TAILER_PORT: port.default(3001),
  WORKER_PORT: port.default(3002),
  /** Replication lag past which `_operations` subscribers get a `slot.lag` event (once per crossing). */
  OPERATIONS_SLOT_LAG_BYTES: z.coerce
    .number()
    .int()
    .min(1)
    .default(1024 ** 3),
  SLOT_WAL_WARN_BYTES: z.coerce
    .number()
    .int()
    .min(1)
    .default(1024 ** 3),
  TAILER_MAX_HELD_BYTES: z.coerce
    .number()
    .int()
    .min(1024 * 1024)
    .default(8 * 1024 ** 2),
  TAILER_SLOT_FAILOVER: bool.default(true),
  /** A NATS JetStream (cluster) between the leading tailer and delivery workers; unset: one process delivers. */
  DELIVERY_BUS: z
    .string()
    .transform((s, ctx) => {
      const servers = s.split(',').map((x) => x.trim());
      for (const server of servers) {
        const ok = URL.canParse(server) && new URL(server).protocol === 'nats:';
        if (!ok) {
          ctx.addIssue({ code: 'custom', message: 'expected nats:// URLs, comma-separated (the servers of one cluster)' });
          return z.NEVER;
        }
      }
      return servers;
    })
    .optional(),
  DELIVERY_BUS_STREAM: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,64}$/, 'letters, digits, _ and - (a JetStream stream name)')
    .default('WALGATE_DELIVERIES'),
  DELIVERY_BUS_PARTITIONS: z.coerce.number().int().min(1).max(1024).default(16),
  DELIVERY_BUS_REPLICAS: z.coerce.number().int().min(1).max(5).default(1),
  TAILER_STANDBY_URL: url(['postgres:', 'postgresql:']).optional(),
  TAILER_STATE_FILE: z.string().default(''),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  GRAPHQL_INTROSPECTION: bool.optional(),
  GRAPHQL_MAX_DEPTH: z.coerce.number().int().min(1).default(8),
  GRAPHQL_MAX_COST: z.coerce.number().int().min(1).default(100),
  GRAPHQL_MAX_DOCUMENT_BYTES: z.coerce.number().int().min(64).default(8192),
  TOKEN_CLOCK_SKEW_SECONDS: z.coerce.number().int().min(0).max(300).default(30),
  WEBHOOK_KEEP_PAYLOADS: bool.default(true),
  METRICS_PORT: port.optional(),
  REFRESH_REUSE_GRACE_SECONDS: z.coerce.number().int().min(0).max(300).default(10),
  AUTH_EVENTS_RETENTION_MS: retentionMs.default(90 * DAY_MS),
  OPERATIONS_RETENTION_MS: retentionMs.default(30 * DAY_MS),
  MAIL_COURIER_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(8),
  MAIL_MAX_ATTEMPTS: z.coerce.number().int().min(1).default(12),
  MAIL_RETRY_MAX_DELAY_MS: positiveMs.default(300_000),
  MAIL_SEND_LEASE_MS: positiveMs.default(60_000),
  MAIL_RETENTION_MS: retentionMs.default(7 * DAY_MS),
  PROVIDER_ALLOW_PRIVATE_NETWORKS: bool.default(false),
  BACKFILL_PAGE_ROWS: z.coerce.number().int().min(1).max(100_000).default(500),
  BACKFILL_PAGE_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .default(4 * 1024 ** 2),
  BACKFILL_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(2),
});

export type Env = z.infer<typeof schema>;

/** The name of every variable walgate reads (the container files are checked against it). */
export const ENV_VARIABLES: readonly string[] = Object.keys(schema.shape);

/** Rules that tie variables together, each reported under the variable to change. */
function checkTogether(e: Env, ctx: z.RefinementCtx): void {
  const production = e.NODE_ENV === 'production';
  if (production && !e.KEY_ENCRYPTION_KEY)
    ctx.addIssue({ code: 'custom', path: ['KEY_ENCRYPTION_KEY'], message: 'required when NODE_ENV=production' });
  if (production && !e.DATABASE_URL) ctx.addIssue({ code: 'custom', path: ['DATABASE_URL'], message: 'required when NODE_ENV=production' });
  if (e.API_HEADERS_TIMEOUT_MS > e.API_REQUEST_TIMEOUT_MS)
    ctx.addIssue({ code: 'custom', path: ['API_HEADERS_TIMEOUT_MS'], message: 'must not exceed API_REQUEST_TIMEOUT_MS' });
  if (e.WEBHOOK_RETRY_DELAYS_MS.length < 1)
    ctx.addIssue({ code: 'custom', path: ['WEBHOOK_RETRY_DELAYS_MS'], message: 'needs at least one delay' });
  if (production && e.TRUST_PROXY?.toLowerCase() === 'true') {
    // `true` trusts every X-Forwarded-For entry, so the left-most one, which the client writes
    // itself, would key every per-IP limit: a fresh value per request escapes them all.
    ctx.addIssue({
      code: 'custom',
      path: ['TRUST_PROXY'],
      message:
        '`true` is refused when NODE_ENV=production (clients could choose their own address); set the number of proxies in front of walgate (e.g. 1) or their addresses (e.g. 10.0.0.0/8)',
    });
  }
}

/** The variables as the code uses them: grouped by area, in their units, defaults applied. */
const configSchema = schema.superRefine(checkTogether).transform((e) => ({
  env: e.NODE_ENV,
  port: e.PORT,
  host: e.HOST,
  /** The api's hard deadlines for receiving a request: its headers, and all of it (headers and body). */
  http: { headersTimeoutMs: e.API_HEADERS_TIMEOUT_MS, requestTimeoutMs: e.API_REQUEST_TIMEOUT_MS },
  databaseUrl: e.DATABASE_URL,
  dataDir: e.DATA_DIR,
  redisUrl: e.REDIS_URL,
  smtpUrl: e.SMTP_URL,
  mailFrom: e.MAIL_FROM,
  /** The issuer of tokens. */
  publicUrl: (e.PUBLIC_URL ?? `http://localhost:${e.PORT}`).replace(/\/+$/, ''),
  trustProxy: e.TRUST_PROXY,
  keyEncryptionKey: e.KEY_ENCRYPTION_KEY ? Buffer.from(e.KEY_ENCRYPTION_KEY, 'base64') : undefined,
  webhooks: {
    allowPrivateNetworks: e.WEBHOOK_ALLOW_PRIVATE_NETWORKS,
    retryDelaysMs: e.WEBHOOK_RETRY_DELAYS_MS,
    breakerFailures: e.WEBHOOK_BREAKER_FAILURES,
    breakerCooldownMs: e.WEBHOOK_BREAKER_COOLDOWN_MS,
    /** How long a delivery may wait on an open breaker before it is dead; unset: its schedule's span plus two cool-downs (schedule.ts). */
    breakerMaxWaitMs: e.WEBHOOK_BREAKER_MAX_WAIT_MS,
    timeoutMs: e.WEBHOOK_TIMEOUT_MS,
    /** How long the previous secret still signs after a rotation. */
    secretGraceMs: e.WEBHOOK_SECRET_GRACE_MS,
    /** A delivery not delivered this long after the tailer read it is parked in the retry queue. */
    parkAfterMs: e.WEBHOOK_PARK_AFTER_MS,
    /** Every delivery keeps the body and request headers it sent, on its own row, for the retention window. */
    keepPayloads: e.WEBHOOK_KEEP_PAYLOADS,
    /** Requests in flight at once to one endpoint (subscription), per tailer process; also its pool's sockets. */
    endpointConcurrency: e.WEBHOOK_ENDPOINT_CONCURRENCY,
    /** …up to this while deliveries wait and the endpoint answers fast (delivery/endpoint-limits.ts); never below the above. */
    endpointConcurrencyMax: Math.max(e.WEBHOOK_ENDPOINT_CONCURRENCY, e.WEBHOOK_ENDPOINT_CONCURRENCY_MAX),
    /** A paused subscription's deliveries older than this are dead (visible, replayable): its backlog is bounded. */
    pausedBacklogMs: e.WEBHOOK_PAUSED_BACKLOG_MS,
  },
  /** Delivered history is removed this long after delivery, dead letters this long after their capture. */
  retention: { deliveredMs: e.WEBHOOK_RETENTION_MS, deadMs: e.WEBHOOK_DEAD_RETENTION_MS },
  tailerPort: e.TAILER_PORT,
  /** A delivery worker's health and metrics listener. */
  workerPort: e.WORKER_PORT,
  /** Retained WAL that makes the slot watchdog warn when max_slot_wal_keep_size is unlimited. */
  slotWalWarnBytes: e.SLOT_WAL_WARN_BYTES,
  operationsSlotLagBytes: e.OPERATIONS_SLOT_LAG_BYTES,
  /** Payload bytes the tailer holds in memory (waiting or in flight) before it stops reading the WAL. */
  tailerMaxHeldBytes: e.TAILER_MAX_HELD_BYTES,
  /** Postgres 17+: the slot is a failover slot (a standby with sync_replication_slots=on keeps a copy). */
  tailerSlotFailover: e.TAILER_SLOT_FAILOVER,
  /** The delivery bus (src/delivery/bus/): unset, the leading tailer delivers; set, it publishes and workers deliver. */
  bus: e.DELIVERY_BUS
    ? { servers: e.DELIVERY_BUS, stream: e.DELIVERY_BUS_STREAM, partitions: e.DELIVERY_BUS_PARTITIONS, replicas: e.DELIVERY_BUS_REPLICAS }
    : undefined,
  /** A standby that should hold a synchronised copy of the slot: /readyz and the failover gauge ask it. */
  tailerStandbyUrl: e.TAILER_STANDBY_URL,
  /** A file outside the database keeping the highest WAL position processed, so a restore is noticed after a tailer restart too (empty: memory only). */
  tailerStateFile: e.TAILER_STATE_FILE || undefined,
  logLevel: e.LOG_LEVEL,
  /** Seconds by which another instance's clock may differ when token times (exp, nbf, iat) are checked. */
  tokenClockSkewSeconds: e.TOKEN_CLOCK_SKEW_SECONDS,
  /** Seconds after its first use during which a refresh token is exchanged again rather than treated as leaked. */
  refreshReuseGraceSeconds: e.REFRESH_REUSE_GRACE_SECONDS,
  /** Audit rows are removed this long after they were written. */
  authEventsRetentionMs: e.AUTH_EVENTS_RETENTION_MS,
  operationsRetentionMs: e.OPERATIONS_RETENTION_MS,
  mail: {
    /** Mails one api process sends at once. */
    courierConcurrency: e.MAIL_COURIER_CONCURRENCY,
    /** Tries before a mail is dead. */
    maxAttempts: e.MAIL_MAX_ATTEMPTS,
    /** The longest wait between two tries (the waits double from one second up to it). */
    retryMaxDelayMs: e.MAIL_RETRY_MAX_DELAY_MS,
    /** How long a claimed mail is left to its courier before another may take it (a courier that died). */
    sendLeaseMs: e.MAIL_SEND_LEASE_MS,
    /** Sent and dead mails are removed this long after they were written. */
    retentionMs: e.MAIL_RETENTION_MS,
  },
  graphql: {
    /** Schema introspection: on unless NODE_ENV=production, or as GRAPHQL_INTROSPECTION says. */
    introspection: e.GRAPHQL_INTROSPECTION ?? e.NODE_ENV !== 'production',
    maxDepth: e.GRAPHQL_MAX_DEPTH,
    /** Fields a document may select, fragments expanded (aliases count each time). */
    maxCost: e.GRAPHQL_MAX_COST,
    maxDocumentBytes: e.GRAPHQL_MAX_DOCUMENT_BYTES,
  },
  /** When set, the api serves /metrics on this port only, not on its public one. */
  metricsPort: e.METRICS_PORT,
  providers: {
    /** Identity providers on loopback/private addresses and over http: (tests, on-prem issuers). */
    allowPrivateNetworks: e.PROVIDER_ALLOW_PRIVATE_NETWORKS,
  },
  backfill: {
    /** Rows one backfill page reads at most. */
    pageRows: e.BACKFILL_PAGE_ROWS,
    /** Bytes (the rows' values as JSON) one page reads at most, one row at least. */
    pageBytes: e.BACKFILL_PAGE_BYTES,
    /** Backfills (each a different subscription, one page in flight each) one tailer reads at once. */
    concurrency: e.BACKFILL_CONCURRENCY,
  },
}));

export type Config = z.output<typeof configSchema>;

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** Parses the process environment (or any record, for tests). Throws ConfigError naming each bad variable. */
export function loadConfig(source: Record<string, string | undefined> = process.env): Config {
  // Empty strings mean "unset": `FOO= npm start` should behave like no FOO at all.
  const cleaned = Object.fromEntries(Object.entries(source).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = configSchema.safeParse(cleaned);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`invalid configuration:\n${lines.join('\n')}`);
  }
  return parsed.data;
}
