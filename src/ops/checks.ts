import type { Redis } from 'ioredis';
import { pendingMigrations } from '../core/db/migrate.js';
import type { Pool } from '../core/db/pool.js';

export interface Check {
  name: string;
  ok: boolean;
  detail?: unknown;
}

function within<T>(ms: number, p: Promise<T>): Promise<T> {
  return Promise.race([p, new Promise<T>((_, reject) => setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms).unref())]);
}

export async function databaseCheck(pool: Pool): Promise<Check> {
  try {
    await within(2000, pool.query('SELECT 1'));
    const pending = await within(2000, pendingMigrations(pool));
    return pending.length ? { name: 'migrations', ok: false, detail: { pending } } : { name: 'postgres', ok: true };
  } catch (err) {
    return { name: 'postgres', ok: false, detail: (err as Error).message };
  }
}

export async function redisCheck(redis: Redis | undefined): Promise<Check | undefined> {
  if (!redis) return undefined;
  try {
    await within(2000, redis.ping());
    return { name: 'redis', ok: true };
  } catch (err) {
    return { name: 'redis', ok: false, detail: (err as Error).message };
  }
}

/** The answer of a readiness endpoint: 200 when every check passes, else 503. */
export function readiness(checks: Array<Check | undefined>): { status: number; body: { status: string; checks: Check[] } } {
  const list = checks.filter((c): c is Check => c !== undefined);
  const ok = list.every((c) => c.ok);
  return { status: ok ? 200 : 503, body: { status: ok ? 'ready' : 'not ready', checks: list } };
}
