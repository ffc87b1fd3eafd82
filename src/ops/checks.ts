import type { Redis } from 'ioredis';
import { pendingMigrations } from '../core/db/migrate.js';
import type { Pool } from '../core/db/pool.js';
import type { Logger } from '../core/log.js';

/**
 * One check of /readyz. A failure says which dependency, never the driver's error text (that can
 * name hosts, users and addresses, and /readyz may be reachable from outside): the text goes to
 * the log.
 */
export interface Check {
  name: string;
  /** `degraded`: working, but something needs an operator (a capture gap); readiness stays 200. */
  state: 'ok' | 'failed' | 'degraded';
  ok: boolean;
  detail?: unknown;
}

const passed = (name: string, detail?: unknown): Check => ({ name, state: 'ok', ok: true, ...(detail === undefined ? {} : { detail }) });
const failed = (name: string, detail?: unknown): Check => ({
  name,
  state: 'failed',
  ok: false,
  ...(detail === undefined ? {} : { detail }),
});

/** A check's state from a boolean, for checks that are not a connection (the tailer's role). */
export function checkOf(name: string, ok: boolean, detail?: unknown): Check {
  return ok ? passed(name, detail) : failed(name, detail);
}

function within<T>(ms: number, p: Promise<T>): Promise<T> {
  return Promise.race([p, new Promise<T>((_, reject) => setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms).unref())]);
}

export async function databaseCheck(pool: Pool, log: Logger): Promise<Check> {
  try {
    await within(2000, pool.query('SELECT 1'));
    const pending = await within(2000, pendingMigrations(pool));
    return pending.length ? failed('migrations', { pending }) : passed('postgres');
  } catch (err) {
    log.warn({ err: { message: (err as Error).message }, check: 'postgres' }, 'readiness check failed');
    return failed('postgres');
  }
}

export async function redisCheck(redis: Redis | undefined, log: Logger): Promise<Check | undefined> {
  if (!redis) return undefined;
  try {
    await within(2000, redis.ping());
    return passed('redis');
  } catch (err) {
    log.warn({ err: { message: (err as Error).message }, check: 'redis' }, 'readiness check failed');
    return failed('redis');
  }
}

/** The answer of a readiness endpoint: 200 when every check passes, else 503. */
export function readiness(checks: Array<Check | undefined>): { status: number; body: { status: string; checks: Check[] } } {
  const list = checks.filter((c): c is Check => c !== undefined);
  const ok = list.every((c) => c.ok);
  const degraded = list.some((c) => c.state === 'degraded');
  return { status: ok ? 200 : 503, body: { status: ok ? (degraded ? 'degraded' : 'ready') : 'not ready', checks: list } };
}
