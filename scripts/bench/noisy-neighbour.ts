import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { provisionEnvironment } from '../../src/auth/provision.js';
import { insertSubscription } from '../../test/support/subscriptions.js';
import type { Bench } from './run.js';
import { until } from './processes.js';
import { percentile, round, summarize } from './stats.js';

// A victim project's commit → receipt while another project's endpoints hang: the neighbour has 10
// subscriptions whose receiver (on the victim's origin) never answers and 3,000 deliveries stuck;
// the victim commits one change every 25 ms. Baseline: the victim alone, on the same tailer.

const CHANGES = 200;
const NOISY_SUBSCRIPTIONS = 10;
const NOISY_ROWS = 300;

async function victimLatencies(b: Bench, client: pg.Client, from: number): Promise<number[]> {
  await b.receiver.reset(['/victim']);
  await b.receiver.latency();
  for (let i = 0; i < CHANGES; i++) {
    await client.query('INSERT INTO bench_master.victim (id) VALUES ($1)', [from + i]);
    await sleep(25);
  }
  await until(
    async () => {
      const { received } = await b.receiver.stats();
      return { done: received >= CHANGES, state: `${received} of ${CHANGES}` };
    },
    60_000,
    'the victim’s deliveries',
  );
  return (await b.receiver.stats()).latencies;
}

export async function noisyNeighbour(b: Bench): Promise<void> {
  await provisionEnvironment(b.ctx, { projectId: 'noisy', name: 'master' });
  await b.pool.query('CREATE TABLE IF NOT EXISTS noisy_master.stuck (id int PRIMARY KEY)');
  await b.pool.query('CREATE TABLE IF NOT EXISTS bench_master.victim (id int PRIMARY KEY)');
  const subscribe = (projectId: string, table: string, path: string) =>
    insertSubscription(b.ctx, { projectId, environment: 'master', schema: `${projectId}_master`, table, url: `${b.receiver.url}${path}`, secret: b.secret });
  await subscribe('bench', 'victim', '/victim');
  const tailer = await b.startTailer();
  const client = new pg.Client({ connectionString: b.clusterUrl });
  await client.connect();
  try {
    const alone = await victimLatencies(b, client, 0);
    for (let i = 0; i < NOISY_SUBSCRIPTIONS; i++) await subscribe('noisy', 'stuck', `/hang-${i}`);
    await sleep(500); // the tailer sees the new subscriptions
    await client.query('INSERT INTO noisy_master.stuck SELECT g FROM generate_series(1, $1::int) g', [NOISY_ROWS]);
    await sleep(2000); // every stuck endpoint has taken its connections
    const neighboured = await victimLatencies(b, client, CHANGES);
    const p95 = percentile(neighboured, 95);
    const baseline = percentile(alone, 95);
    b.record({
      path: `noisy neighbour: victim commit → receipt p95 while another project has ${NOISY_SUBSCRIPTIONS} hanging endpoints and ${NOISY_SUBSCRIPTIONS * NOISY_ROWS} stuck deliveries`,
      unit: 'ms',
      value: summarize([p95]),
      baseline: { name: 'victim alone, p95', value: summarize([baseline]) },
      ratio: round(p95 / Math.max(1, baseline)),
      target: '≤ 1000 ms',
      met: p95 <= 1000,
      extra: { p50Ms: percentile(neighboured, 50), p99Ms: percentile(neighboured, 99), maxMs: Math.max(...neighboured), changes: CHANGES },
    });
  } finally {
    await client.end();
    await tailer.stop();
    await b.pool.query(`DELETE FROM walgate.webhooks WHERE project_id = 'noisy' OR url LIKE '%/victim'`);
  }
}
