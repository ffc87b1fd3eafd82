import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadConfig, type Config } from '../../src/core/config.js';
import { createContext, type Context, type ContextOverrides } from '../../src/core/context.js';
import { startApi, type RunningApi } from '../../src/main/api-app.js';
import { createLogger } from '../../src/core/log.js';
import type { CreateEnvironmentInput, Environment } from '../../src/projects/environments.js';
import { provisionEnvironment } from '../../src/auth/provision.js';
import { createManagementToken } from '../../src/webhooks/management-tokens.js';
import { TestClock } from './clock.js';
import { createTestDatabase, type TestDatabase } from './database.js';
import { HttpClient } from './http.js';
import { CapturedLogs } from './logs.js';
import { TestSmtpServer } from './smtp.js';

export interface TestApiOptions {
  /** Environment variables on top of the test defaults. */
  env?: Record<string, string | undefined>;
  /** Use Redis (REDIS_URL) for the revocation list and rate limits. */
  redis?: boolean;
  /** Use this Redis instead (e.g. one that is not there). */
  redisUrl?: string;
  /** Share another test api's database (two api processes over one database). */
  database?: TestDatabase;
  overrides?: ContextOverrides;
  /** Listen on this port (default: any free one); for tests whose PUBLIC_URL must be the api's real address. */
  port?: number;
}

export interface TestApi {
  url: string;
  http: HttpClient;
  ctx: Context;
  config: Config;
  clock: TestClock;
  smtp: TestSmtpServer;
  logs: CapturedLogs;
  database: TestDatabase;
  api: RunningApi;
  /** A project environment (created with its keys), and the HTTP client scoped to it. */
  provision(input: CreateEnvironmentInput): Promise<{ env: Environment; http: HttpClient }>;
  managementToken(projectId: string): Promise<string>;
  close(): Promise<void>;
}

export function redisUrlOrSkip(ctx: Mocha.Context): string {
  const url = process.env.REDIS_URL;
  if (!url) {
    // Said plainly, so a run without Redis does not pass for a run that tested it.
    console.warn('      (skipped: REDIS_URL is not set, the Redis implementation was not tested)');
    ctx.skip();
  }
  return url!;
}

/** The api on a random port with its own database, a real SMTP server, captured logs and a test clock. */
export async function startTestApi(options: TestApiOptions = {}): Promise<TestApi> {
  const database = options.database ?? (await createTestDatabase());
  const smtp = new TestSmtpServer();
  await smtp.start();
  const dataDir = await mkdtemp(path.join(tmpdir(), 'walgate-data-'));
  const config = loadConfig({
    NODE_ENV: 'test',
    DATA_DIR: dataDir,
    KEY_ENCRYPTION_KEY: (options.env?.KEY_ENCRYPTION_KEY as string | undefined) ?? randomBytes(32).toString('base64'),
    SMTP_URL: smtp.url,
    LOG_LEVEL: 'info',
    PUBLIC_URL: 'http://walgate.test',
    ...options.env,
    REDIS_URL: options.redisUrl ?? (options.redis ? process.env.REDIS_URL : undefined),
  });
  const clock = new TestClock();
  const logs = new CapturedLogs();
  const ctx = await createContext(config, database.url, {
    clock: clock.now,
    log: createLogger(config.logLevel, logs),
    cacheTtlMs: 0,
    redisPrefix: `walgate-test:${randomBytes(4).toString('hex')}:`,
    ...options.overrides,
  });
  const api = await startApi(ctx, options.port ?? 0, '127.0.0.1');
  const http = new HttpClient(api.url);
  return {
    url: api.url,
    http,
    ctx,
    config,
    clock,
    smtp,
    logs,
    database,
    api,
    async provision(input) {
      const env = await provisionEnvironment(ctx, input);
      return { env, http: http.with({ 'x-project-id': env.projectId, environment: env.name }) };
    },
    async managementToken(projectId) {
      return (await createManagementToken(ctx.pool, projectId, 'test')).token;
    },
    async close() {
      await api.stop();
      await ctx.close();
      await smtp.stop();
      await rm(dataDir, { recursive: true, force: true });
      if (!options.database) await database.drop();
    },
  };
}

/** An HTTP client of the management API for a project environment, with a fresh management token. */
export async function managementClient(t: TestApi, projectId: string, environment = 'master'): Promise<HttpClient> {
  return new HttpClient(t.url, { authorization: `Bearer ${await t.managementToken(projectId)}`, 'x-project-id': projectId, environment });
}
