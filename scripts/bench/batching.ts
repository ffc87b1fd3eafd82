import pg from 'pg';
import { insertSubscription } from '../../test/support/subscriptions.js';
import type { Bench, DaemonFigures } from './run.js';
import { burst, median, medianCpu, ROWS, RUNS, type Round } from './delivery-rate.js';
import { round } from './stats.js';

// Batched delivery (docs/webhooks.md: Batching) against unbatched, in the same rounds of the same
// tailer: ROWS INSERTs of 1 KB rows in 1,000-row transactions to a subscription with
// `batch: {maxEvents: BATCH}` and to one without, first INSERT → the receiver has every event
// (each request's signature checked, each event id counted once); the two take turns in each round.

const BATCH = Number(process.env.BENCH_BATCH_MAX_EVENTS ?? 100);

async function subscribe(b: Bench, table: string, path: string, maxEvents: number): Promise<string> {
  await b.pool.query(`CREATE TABLE IF NOT EXISTS ${table} (id bigserial PRIMARY KEY, payload text)`);
  return insertSubscription(b.ctx, {
    projectId: 'bench',
    environment: 'master',
    schema: 'bench_master',
    table: table.split('.')[1]!,
    events: ['INSERT'],
    url: `${b.receiver.url}${path}`,
    secret: b.secret,
    batch: { maxEvents },
  });
}

async function batchedThroughput(b: Bench): Promise<void> {
  const batched = await subscribe(b, 'bench_master.rows_batched', '/walbatched', BATCH);
  const single = await subscribe(b, 'bench_master.rows_single', '/walsingle', 1);
  const tailer = await b.startTailer();
  const client = new pg.Client({ connectionString: b.clusterUrl });
  await client.connect();
  const rounds: Record<'batched' | 'single', Round[]> = { batched: [], single: [] };
  let daemon: DaemonFigures | undefined;
  try {
    const consumerPid = tailer.daemon.child.pid!;
    // A warm-up round of each (connections, TLS sessions, JIT), not measured.
    await burst(b, client, { table: 'bench_master.rows_batched', path: '/walbatched', rows: 2000, txRows: 1000 });
    await burst(b, client, { table: 'bench_master.rows_single', path: '/walsingle', rows: 2000, txRows: 1000 });
    await tailer.daemon.beginRun();
    for (let run = 0; run < RUNS; run++) {
      const o = { rows: ROWS, txRows: 1000, consumerPid };
      rounds.batched.push(await burst(b, client, { ...o, table: 'bench_master.rows_batched', path: '/walbatched' }));
      rounds.single.push(await burst(b, client, { ...o, table: 'bench_master.rows_single', path: '/walsingle' }));
    }
    daemon = await tailer.daemon.endRun();
  } finally {
    await client.end();
    await tailer.stop();
    for (const id of [batched, single]) await b.pool.query('DELETE FROM walgate.webhooks WHERE id = $1', [id]);
  }
  const value = median(rounds.batched, 'delivered');
  const base = median(rounds.single, 'delivered');
  const ratio = value.median / base.median;
  b.record({
    path: `WAL → delivered with batch maxEvents ${BATCH} vs unbatched, 1 subscription each (${ROWS.toLocaleString('en')} INSERTs in 1,000-row transactions)`,
    unit: 'deliveries/s',
    value,
    baseline: { name: 'the same tailer delivering one request per change, same receiver, same rounds', value: base },
    ratio: round(ratio),
    target: '≥ 3× unbatched',
    met: ratio >= 3,
    extra: {
      rows: ROWS,
      transactionRows: 1000,
      runs: RUNS,
      maxEvents: BATCH,
      cpuUsPerDelivery: { 'walgate (batched)': medianCpu(rounds.batched), 'walgate (unbatched)': medianCpu(rounds.single) },
    },
    daemons: daemon ? { tailer: daemon } : undefined,
  });
}

/** BENCH_ONLY=throughput-batched runs it alone (BENCH_BATCH_MAX_EVENTS sets maxEvents, default 100). */
export function batchingPaths(b: Bench): Array<[string, () => Promise<void>]> {
  return [['throughput-batched', () => batchedThroughput(b)]];
}
