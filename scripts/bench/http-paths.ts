import { randomBytes } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { hash } from '@node-rs/argon2';
import autocannon from 'autocannon';
import { Pool as HttpPool } from 'undici';
import { hashPassword } from '../../src/auth/passwords.js';
import type { Bench } from './run.js';
import { percentile, round, summarize } from './stats.js';

const SECONDS = Number(process.env.BENCH_HTTP_SECONDS ?? 4);
const RUNS = 3;
const PASSWORD = 'correct horse battery staple 42';

// Every request from its own address (TRUST_PROXY=1 for the benchmark api: it trusts the one
// X-Forwarded-For entry sent here): the per-IP limits are the same for everyone, and this
// measures the work, not the limiter saying no.
const randomIp = () => `10.${randomBytes(1)[0]}.${randomBytes(1)[0]}.${randomBytes(1)[0]}`;

function cannon(opts: autocannon.Options): Promise<autocannon.Result> {
  return new Promise((resolve, reject) => {
    autocannon({ duration: SECONDS, ...opts }, (err, result) => (err ? reject(err) : resolve(result)));
  });
}

/** A verified user of the bench project, logged in; returns its tokens. */
async function account(b: Bench, apiUrl: string, email: string): Promise<{ accessToken: string; refreshToken: string }> {
  await b.pool.query(
    `INSERT INTO walgate.users (project_id, environment, email, password_hash, email_verified_at, created_at, updated_at)
     VALUES ('bench', 'master', $1, $2, now(), now(), now()) ON CONFLICT DO NOTHING`,
    [email, await b.passwordHash()],
  );
  const res = await fetch(`${apiUrl}/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-project-id': 'bench', 'x-forwarded-for': randomIp() },
    body: JSON.stringify({ email, password: PASSWORD }),
  });
  if (res.status !== 200) throw new Error(`login for the benchmark failed: ${res.status} ${await res.text()}`);
  return (await res.json()) as { accessToken: string; refreshToken: string };
}

export async function protectedRead(b: Bench): Promise<void> {
  for (const store of b.redisUrl ? (['redis', 'postgres'] as const) : (['postgres'] as const)) {
    const api = await b.startApi(store);
    try {
      const { accessToken } = await account(b, api.url, `reader-${store}@example.com`);
      const base = { connections: 100 };
      const me = { ...base, url: `${api.url}/auth/me`, headers: { authorization: `Bearer ${accessToken}`, 'x-project-id': 'bench' } };
      // The baseline is the same daemon's /healthz: an Express hello-world route in the same
      // process behind the same middleware (request id, access log, metrics), so the ratio is the
      // cost of verifying the token, checking the revocation list and reading the user.
      const hello = { ...base, url: `${api.url}/healthz` };
      await cannon({ ...me, duration: 1 }); // warm-up (key cache, connection pools, JIT)
      await cannon({ ...hello, duration: 1 });
      const baseline: number[] = [];
      const baselineP99: number[] = [];
      const rps: number[] = [];
      const p99: number[] = [];
      let non2xx = 0;
      let daemon = { cpuPercent: 0, peakRssMb: 0, eventLoopP99Ms: 0 };
      for (let i = 0; i < RUNS; i++) {
        const h = await cannon(hello);
        baseline.push(h.requests.average);
        baselineP99.push(h.latency.p99);
        await api.daemon.beginRun();
        const r = await cannon(me);
        daemon = await api.daemon.endRun();
        rps.push(r.requests.average);
        p99.push(r.latency.p99);
        non2xx += r.non2xx + r.errors + h.non2xx + h.errors;
      }
      if (non2xx > 0) throw new Error(`protected read: ${non2xx} requests were not 200`);
      const ratio = summarize(rps).median / summarize(baseline).median;
      const p99Ratio = summarize(p99).median / summarize(baselineP99).median;
      b.record({
        path: `protected read (GET /auth/me, ${store} revocation list)`,
        unit: 'requests/s',
        value: summarize(rps),
        baseline: { name: 'GET /healthz, same api process', value: summarize(baseline) },
        ratio: round(ratio),
        target: '≥ 0.75× baseline requests/s; p99 ≤ 3× baseline p99',
        met: ratio >= 0.75 && p99Ratio <= 3,
        extra: { p99Ms: summarize(p99), baselineP99Ms: summarize(baselineP99), p99Ratio: round(p99Ratio) },
        daemons: { api: daemon },
      });
    } finally {
      await api.stop();
    }
  }
}

export async function login(b: Bench): Promise<void> {
  // The baseline: argon2id hashes per second on this machine, one at a time per core (more only
  // contend for the same cores).
  const hashRuns: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    let n = 0;
    const until = Date.now() + 2000;
    await Promise.all(
      Array.from({ length: availableParallelism() }, async () => {
        while (Date.now() < until) {
          await hash(PASSWORD, { algorithm: 2, memoryCost: 19456, timeCost: 2, parallelism: 1 });
          n++;
        }
      }),
    );
    hashRuns.push(n / 2);
  }
  const api = await b.startApi('postgres');
  try {
    const users = Array.from({ length: 50 }, (_, i) => `login-${i}@example.com`);
    for (const u of users) await account(b, api.url, u);
    let next = 0;
    const requests = [
      {
        method: 'POST' as const,
        path: '/auth/login',
        setupRequest: (req: autocannon.Request) => ({
          ...req,
          headers: { 'content-type': 'application/json', 'x-project-id': 'bench', 'x-forwarded-for': randomIp() },
          body: JSON.stringify({ email: users[next++ % users.length], password: PASSWORD }),
        }),
      },
    ];
    const rates: number[] = [];
    const loopP99: number[] = [];
    let bad = 0;
    let daemon = { cpuPercent: 0, peakRssMb: 0, eventLoopP99Ms: 0 };
    for (let i = 0; i < RUNS; i++) {
      await api.daemon.beginRun();
      const r = await cannon({ url: api.url, connections: 50, requests });
      daemon = await api.daemon.endRun();
      rates.push(r.requests.average);
      loopP99.push(daemon.eventLoopP99Ms);
      bad += r.non2xx + r.errors;
    }
    if (bad > 0) throw new Error(`login: ${bad} requests were not 200`);
    const ratio = summarize(rates).median / summarize(hashRuns).median;
    b.record({
      path: 'login (50 distinct users)',
      unit: 'logins/s',
      value: summarize(rates),
      baseline: { name: 'argon2id hashes/s, same machine', value: summarize(hashRuns) },
      ratio: round(ratio),
      target: '≥ 0.7× the hash-bound rate; api event-loop delay p99 ≤ 20 ms',
      met: ratio >= 0.7 && summarize(loopP99).median <= 20,
      extra: { eventLoopP99Ms: summarize(loopP99) },
      daemons: { api: daemon },
    });
  } finally {
    await api.stop();
  }
}

export async function refresh(b: Bench, readBaseline: number | undefined): Promise<void> {
  const api = await b.startApi('postgres');
  try {
    const chains = await Promise.all(Array.from({ length: 100 }, (_, i) => account(b, api.url, `refresh-${i}@example.com`).then((t) => t.refreshToken)));
    const http = new HttpPool(api.url, { connections: 100 });
    const rates: number[] = [];
    const latencies: number[] = [];
    let daemon = { cpuPercent: 0, peakRssMb: 0, eventLoopP99Ms: 0 };
    // Run 0 is a warm-up of one second, not counted (connections, prepared statements, JIT), as
    // the read path's is.
    for (let run = -1; run < RUNS; run++) {
      const warmUp = run < 0;
      await api.daemon.beginRun();
      let done = 0;
      const until = Date.now() + (warmUp ? 1000 : SECONDS * 1000);
      // 100 connections, each chaining its own tokens: every exchange uses the token the last one returned.
      await Promise.all(
        chains.map(async (_, i) => {
          while (Date.now() < until) {
            const started = performance.now();
            const res = await http.request({
              method: 'POST',
              path: '/auth/refresh-token',
              headers: { 'content-type': 'application/json', 'x-project-id': 'bench', 'x-forwarded-for': randomIp() },
              body: JSON.stringify({ refreshToken: chains[i] }),
            });
            const body = (await res.body.json()) as { refreshToken?: string };
            if (res.statusCode !== 200 || !body.refreshToken) throw new Error(`refresh failed: ${res.statusCode}`);
            chains[i] = body.refreshToken;
            if (!warmUp) latencies.push(performance.now() - started);
            done++;
          }
        }),
      );
      daemon = await api.daemon.endRun();
      if (!warmUp) rates.push(done / SECONDS);
    }
    await http.close();
    const median = summarize(rates).median;
    b.record({
      path: 'refresh (100 connections, chained tokens)',
      unit: 'refreshes/s',
      value: summarize(rates),
      baseline: readBaseline === undefined ? undefined : { name: 'protected read (Postgres store), this run', value: summarize([readBaseline]) },
      ratio: readBaseline === undefined ? undefined : round(median / readBaseline),
      target: '≥ 1,500/s with p99 ≤ 100 ms at 100 connections',
      met: median >= 1500 && percentile(latencies, 99) <= 100,
      extra: { p99Ms: round(percentile(latencies, 99)) },
      daemons: { api: daemon },
    });
  } finally {
    await api.stop();
  }
}

export { hashPassword, PASSWORD };
