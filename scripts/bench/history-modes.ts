import pg from 'pg';
import { insertSubscription } from '../../test/support/subscriptions.js';
import type { Bench, DaemonFigures } from './run.js';
import { startFloor } from './baselines.js';
import { burst, FANOUT, FANOUT_ROWS, median, medianCpu, ROWS, RUNS, type Round } from './delivery-rate.js';
import { round } from './stats.js';

// `history: "failures"` (docs/webhooks.md: History) against the floor, in rounds of their own: a
// change delivered at its first attempt leaves only its count in the per-minute rollup, not a
// history row, so what the tailer and Postgres spend per delivery approaches what the floor
// spends (the floor writes nothing durable). The same rounds run a "full" subscription too, so
// the row says what the mode buys on this machine today. Measured as delivery-rate.ts measures:
// ROWS INSERTs of 1 KB rows in 1,000-row transactions, first INSERT → the receiver has every one
// (signatures checked, ids counted once); the consumers take turns within each round.

async function subscribe(b: Bench, table: string, path: string, history: 'full' | 'failures'): Promise<string> {
  await b.pool.query(`CREATE TABLE IF NOT EXISTS ${table} (id bigserial PRIMARY KEY, payload text)`);
  return insertSubscription(b.ctx, {
    projectId: 'bench',
    environment: 'master',
    schema: 'bench_master',
    table: table.split('.')[1]!,
    events: ['INSERT'],
    url: `${b.receiver.url}${path}`,
    secret: b.secret,
    history,
  });
}

/** History rows a subscription wrote (none expected under "failures"). */
async function historyRows(b: Bench, webhookId: string): Promise<number> {
  const { rows } = await b.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM walgate.deliveries WHERE webhook_id = $1', [webhookId]);
  return rows[0]!.n;
}

/** One subscription with history "failures" (and one with "full") against the floor, same rounds. */
async function oneSubscriptionFailures(b: Bench): Promise<void> {
  await b.pool.query(`CREATE TABLE IF NOT EXISTS bench_master.floor_history (id bigserial PRIMARY KEY, payload text)`);
  const failures = await subscribe(b, 'bench_master.rows_failures', '/walfailures', 'failures');
  const full = await subscribe(b, 'bench_master.rows_full', '/walfull', 'full');
  const tailer = await b.startTailer();
  const floor = await startFloor(b, 'bench_master.floor_history', [`${b.receiver.url}/floorhistory`]);
  const client = new pg.Client({ connectionString: b.clusterUrl });
  await client.connect();
  const rounds: Record<'failures' | 'full' | 'floor', Round[]> = { failures: [], full: [], floor: [] };
  let daemon: DaemonFigures | undefined;
  let kept: number;
  try {
    const tailerPid = tailer.daemon.child.pid!;
    const o = { rows: ROWS, txRows: 1000 };
    // A warm-up round of each (connections, TLS sessions, JIT), not measured.
    await burst(b, client, { table: 'bench_master.rows_failures', path: '/walfailures', rows: 2000, txRows: 1000 });
    await burst(b, client, { table: 'bench_master.rows_full', path: '/walfull', rows: 2000, txRows: 1000 });
    await burst(b, client, { table: 'bench_master.floor_history', path: '/floorhistory', rows: 2000, txRows: 1000 });
    await tailer.daemon.beginRun();
    for (let run = 0; run < RUNS; run++) {
      await floor.delivered(); // a floor that failed says why here
      rounds.failures.push(await burst(b, client, { ...o, table: 'bench_master.rows_failures', path: '/walfailures', consumerPid: tailerPid }));
      rounds.full.push(await burst(b, client, { ...o, table: 'bench_master.rows_full', path: '/walfull', consumerPid: tailerPid }));
      rounds.floor.push(await burst(b, client, { ...o, table: 'bench_master.floor_history', path: '/floorhistory', consumerPid: floor.pid }));
    }
    daemon = await tailer.daemon.endRun();
    kept = await historyRows(b, failures);
  } finally {
    await client.end();
    await floor.stop();
    await tailer.stop();
    for (const id of [failures, full]) await b.pool.query('DELETE FROM walgate.webhooks WHERE id = $1', [id]);
  }
  const value = median(rounds.failures, 'delivered');
  const floorRate = median(rounds.floor, 'delivered');
  const fullRate = median(rounds.full, 'delivered');
  const ratio = value.median / floorRate.median;
  b.record({
    path: `WAL → delivered webhook with history "failures" vs the floor, 1 subscription (${ROWS.toLocaleString('en')} INSERTs in 1,000-row transactions)`,
    unit: 'deliveries/s',
    value,
    baseline: { name: 'the floor: pgoutput → seed payload → both signatures → undici, 32 in flight, nothing durable; same receiver, same rounds', value: floorRate },
    ratio: round(ratio),
    target: '≥ 0.85× the floor; no history row for a first-attempt success',
    met: ratio >= 0.85 && kept === 0,
    extra: {
      rows: ROWS,
      transactionRows: 1000,
      runs: RUNS,
      historyRowsWritten: kept,
      fullHistorySameRounds: { deliveriesPerSecond: Math.round(fullRate.median), toFloor: round(fullRate.median / floorRate.median) },
      failuresToFull: round(value.median / fullRate.median),
      cpuUsPerDelivery: { 'walgate (failures)': medianCpu(rounds.failures), 'walgate (full)': medianCpu(rounds.full), floor: medianCpu(rounds.floor) },
    },
    daemons: daemon ? { tailer: daemon } : undefined,
  });
}

/** Fan-out to FANOUT subscriptions with history "failures", against the floor delivering to as many URLs. */
async function fanoutFailures(b: Bench): Promise<void> {
  await b.pool.query(`CREATE TABLE IF NOT EXISTS bench_master.floor_fan_history (id bigserial PRIMARY KEY, payload text)`);
  const subs: string[] = [];
  for (let i = 0; i < FANOUT; i++) subs.push(await subscribe(b, 'bench_master.fan_failures', `/fanfailures/${i}`, 'failures'));
  const tailer = await b.startTailer();
  const floor = await startFloor(
    b,
    'bench_master.floor_fan_history',
    Array.from({ length: FANOUT }, (_, i) => `${b.receiver.url}/floorfanhistory/${i}`),
  );
  const client = new pg.Client({ connectionString: b.clusterUrl });
  await client.connect();
  const walgate: Round[] = [];
  const floorRounds: Round[] = [];
  let daemon: DaemonFigures | undefined;
  let kept = 0;
  try {
    await burst(b, client, { table: 'bench_master.fan_failures', path: '/fanfailures/', rows: 1000, txRows: 1000, fanout: FANOUT });
    await burst(b, client, { table: 'bench_master.floor_fan_history', path: '/floorfanhistory/', rows: 1000, txRows: 1000, fanout: FANOUT });
    await tailer.daemon.beginRun();
    for (let run = 0; run < RUNS; run++) {
      await floor.delivered();
      const o = { rows: FANOUT_ROWS, txRows: 1000, fanout: FANOUT };
      walgate.push(await burst(b, client, { ...o, table: 'bench_master.fan_failures', path: '/fanfailures/', consumerPid: tailer.daemon.child.pid! }));
      floorRounds.push(await burst(b, client, { ...o, table: 'bench_master.floor_fan_history', path: '/floorfanhistory/', consumerPid: floor.pid }));
    }
    daemon = await tailer.daemon.endRun();
    for (const id of subs) kept += await historyRows(b, id);
  } finally {
    await client.end();
    await floor.stop();
    await tailer.stop();
    for (const id of subs) await b.pool.query('DELETE FROM walgate.webhooks WHERE id = $1', [id]);
  }
  const value = median(walgate, 'delivered');
  const base = median(floorRounds, 'delivered');
  const ratio = value.median / base.median;
  b.record({
    path: `fan-out, ${FANOUT} subscriptions with history "failures" on one table (${FANOUT_ROWS.toLocaleString('en')} INSERTs in 1,000-row transactions)`,
    unit: 'deliveries/s',
    value,
    baseline: { name: `the floor delivering each change to ${FANOUT} URLs, same receiver, same rounds`, value: base },
    ratio: round(ratio),
    target: '≥ 0.85× the floor; no history row for a first-attempt success',
    met: ratio >= 0.85 && kept === 0,
    extra: {
      rows: FANOUT_ROWS,
      subscriptions: FANOUT,
      historyRowsWritten: kept,
      cpuUsPerDelivery: { walgate: medianCpu(walgate), floor: medianCpu(floorRounds) },
    },
    daemons: daemon ? { tailer: daemon } : undefined,
  });
}

/** BENCH_ONLY=throughput-failures,fanout-failures runs these alone. */
export function historyModePaths(b: Bench): Array<[string, () => Promise<void>]> {
  return [
    ['throughput-failures', () => oneSubscriptionFailures(b)],
    ['fanout-failures', () => fanoutFailures(b)],
  ];
}
