import { randomBytes } from 'node:crypto';
import type { Pool as HttpPool } from 'undici';
import type { Bench } from './run.js';

// Logged-in users whose refresh tokens are chained by 100 connections, and the rate of those
// refreshes: the token paths that an environment's options (an active organization, a claims
// function) add work to, measured against the same path without them in the same api.

export const SECONDS = Number(process.env.BENCH_HTTP_SECONDS ?? 4);
export const RUNS = 3;
export const CHAINS = 100;
export const PASSWORD = 'correct horse battery staple 42';
const randomIp = () => `10.${randomBytes(1)[0]}.${randomBytes(1)[0]}.${randomBytes(1)[0]}`;
export const headersOf = (environment: string) => ({ 'content-type': 'application/json', 'x-project-id': 'bench', environment });

export async function post(url: string, body: unknown, environment = 'master', token?: string): Promise<Record<string, any>> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { ...headersOf(environment), 'x-forwarded-for': randomIp(), ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(body),
  });
  if (res.status >= 300) throw new Error(`${url}: ${res.status} ${await res.text()}`);
  return (await res.json()) as Record<string, any>;
}

/** `CHAINS` verified users of the bench project's `environment` (e-mails `prefix` + n); their ids and e-mails. */
export async function benchUsers(b: Bench, environment: string, prefix: string): Promise<Array<{ id: string; email: string }>> {
  const { rows } = await b.pool.query<{ id: string; email: string }>(
    `INSERT INTO walgate.users (project_id, environment, email, password_hash, email_verified_at, created_at, updated_at)
     SELECT 'bench', $4, $1 || g || '@example.com', $2, now(), now(), now() FROM generate_series(1, $3::int) g
     ON CONFLICT (project_id, environment, email) DO UPDATE SET updated_at = now() RETURNING id, email`,
    [prefix, await b.passwordHash(), CHAINS, environment],
  );
  return rows;
}

/** Refreshes per second over `ms`, each connection chaining its own tokens; and the latencies. */
export async function measureRefreshes(
  http: HttpPool,
  tokens: string[],
  ms: number,
  environment = 'master',
): Promise<{ rate: number; latencies: number[] }> {
  let done = 0;
  const latencies: number[] = [];
  const until = Date.now() + ms;
  await Promise.all(
    tokens.map(async (_, i) => {
      while (Date.now() < until) {
        const started = performance.now();
        const res = await http.request({
          method: 'POST',
          path: '/auth/refresh-token',
          headers: { ...headersOf(environment), 'x-forwarded-for': randomIp() },
          body: JSON.stringify({ refreshToken: tokens[i] }),
        });
        const body = (await res.body.json()) as { refreshToken?: string };
        if (res.statusCode !== 200 || !body.refreshToken) throw new Error(`refresh failed: ${res.statusCode}`);
        tokens[i] = body.refreshToken;
        latencies.push(performance.now() - started);
        done++;
      }
    }),
  );
  return { rate: done / (ms / 1000), latencies };
}

/** Logins per second over `ms` by `connections` clients cycling through `emails`; and the latencies. */
export async function measureLogins(apiUrl: string, emails: string[], ms: number, environment = 'master', connections = 20) {
  let done = 0;
  let next = 0;
  const latencies: number[] = [];
  const until = Date.now() + ms;
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (Date.now() < until) {
        const started = performance.now();
        await post(`${apiUrl}/auth/login`, { email: emails[next++ % emails.length], password: PASSWORD }, environment);
        latencies.push(performance.now() - started);
        done++;
      }
    }),
  );
  return { rate: done / (ms / 1000), latencies };
}
