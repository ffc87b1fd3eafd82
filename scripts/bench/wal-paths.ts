import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { LogicalReplicationService, PgoutputPlugin } from 'pg-logical-replication';
import { PUBLICATION } from '../../src/tailer/publication.js';
import { insertSubscription } from '../../test/support/subscriptions.js';
import type { ReceiverStats } from './receiver.js';
import type { Bench } from './run.js';
import { until, withDeadline } from './processes.js';
import { dropSlot } from './baselines.js';
import { percentile, round, summarize } from './stats.js';

const LATENCY_SECONDS = Number(process.env.BENCH_LATENCY_SECONDS ?? 60);
const WARM_UP_SECONDS = 3;
const DRAIN_ROWS = Number(process.env.BENCH_DRAIN_ROWS ?? 100_000);
const DRAIN_RUNS = 2;
/** The longest a drain (or its raw baseline) may take before the bench fails. */
const DRAIN_DEADLINE_MS = 300_000;
const PAYLOAD = 'x'.repeat(1000); // 1 KB rows

/** Inserts 1 KB rows as fast as deliveries keep up (at most `backlog` ahead), until stopped. */
export function writer(client: pg.Client, table: string, fanout: number, received: () => Promise<number>, backlog = 10_000) {
  let inserted = 0;
  let stopped = false;
  const done = (async () => {
    while (!stopped) {
      if (inserted * fanout - (await received()) > backlog) {
        await sleep(20);
        continue;
      }
      await client.query(`INSERT INTO ${table} (payload) SELECT $1 FROM generate_series(1, 200)`, [PAYLOAD]);
      inserted += 200;
    }
  })();
  return {
    get inserted() {
      return inserted;
    },
    async stop() {
      stopped = true;
      await done;
      return inserted;
    },
  };
}

export async function waitForAll(b: Bench, expected: number, timeoutMs = 300_000, what = 'delivery'): Promise<ReceiverStats> {
  let s: ReceiverStats | undefined;
  await until(
    async () => {
      s = await b.receiver.stats();
      return { done: s.unique >= expected, state: `receiver has ${s.unique} of ${expected} events` };
    },
    timeoutMs,
    what,
  );
  return s!;
}

export function checkCorrect(s: ReceiverStats, expected: number, what: string): void {
  if (s.badSignatures > 0) throw new Error(`${what}: ${s.badSignatures} deliveries had a bad signature`);
  if (s.unique !== expected) throw new Error(`${what}: ${s.unique} distinct events received, ${expected} expected`);
}

export interface WriteCounts {
  total: number;
  byTable: Record<string, number>;
}

/**
 * Rows written so far to walgate's tables (inserts + updates + deletes, pg_stat_user_tables). A
 * backend reports its counts at the end of a transaction at most once a second, and when it
 * exits: read after the tailer (the writer) has gone, and a moment after.
 */
export async function rowWrites(b: Bench): Promise<WriteCounts> {
  await sleep(1200);
  const { rows } = await b.pool.query<{ relname: string; n: string }>(
    `SELECT relname, (n_tup_ins + n_tup_upd + n_tup_del)::text AS n FROM pg_stat_user_tables WHERE schemaname = 'walgate'`,
  );
  const byTable = Object.fromEntries(rows.map((r) => [r.relname, Number(r.n)]));
  return { total: Object.values(byTable).reduce((a, n) => a + n, 0), byTable };
}

export function diffWrites(before: WriteCounts, after: WriteCounts): WriteCounts {
  const byTable: Record<string, number> = {};
  for (const [t, n] of Object.entries(after.byTable)) if (n - (before.byTable[t] ?? 0) !== 0) byTable[t] = n - (before.byTable[t] ?? 0);
  return { total: after.total - before.total, byTable };
}

/** The WAL paths by name (the delivery rates against the floor and the peer are in delivery-rate.ts). */
export function walPaths(b: Bench): Array<[string, () => Promise<void>]> {
  return [
    ['latency', () => latency(b)],
    ['scaling', () => scaling(b)],
    ['drain', () => drain(b, 1)],
    ['drain-selective', () => drain(b, 10)],
  ];
}

async function latency(b: Bench): Promise<void> {
  // A settled database: the throughput steps before this one leave hundreds of thousands of fresh
  // rows, and the checkpoint and autovacuum they call for would otherwise land in this window
  // (p99 556 ms after them, 25 ms alone).
  await b.pool.query('VACUUM ANALYZE walgate.deliveries');
  await b.pool.query('CHECKPOINT');
  await b.pool.query('CREATE TABLE IF NOT EXISTS bench_master.steady (id bigserial PRIMARY KEY, payload text)');
  const sub = await insertSubscription(b.ctx, {
    projectId: 'bench', environment: 'master', schema: 'bench_master', table: 'steady', events: ['INSERT'], url: `${b.receiver.url}/steady`, secret: b.secret,
  });
  const tailer = await b.startTailer();
  const client = new pg.Client({ connectionString: b.clusterUrl });
  await client.connect();
  try {
    await b.receiver.reset(['/steady']);
    // A steady 1,000 rows/s: 50 rows every 50 ms, each batch its own transaction. The first
    // WARM_UP_SECONDS are not measured (connections, TLS sessions, JIT).
    let inserted = 0;
    let measuring = false;
    const started = Date.now();
    for (let tick = 1; Date.now() - started < (WARM_UP_SECONDS + LATENCY_SECONDS) * 1000; tick++) {
      if (!measuring && Date.now() - started >= WARM_UP_SECONDS * 1000) {
        measuring = true;
        await b.receiver.latency();
        await tailer.daemon.beginRun();
      }
      await client.query(`INSERT INTO bench_master.steady (payload) SELECT $1 FROM generate_series(1, 50)`, [PAYLOAD]);
      inserted += 50;
      const wait = started + tick * 50 - Date.now();
      if (wait > 0) await sleep(wait);
    }
    const daemon = await tailer.daemon.endRun();
    const s = await waitForAll(b, inserted);
    checkCorrect(s, inserted, 'latency');
    const p50 = percentile(s.latencies, 50);
    const p99 = percentile(s.latencies, 99);
    b.record({
      path: 'latency commit → receipt (steady 1,000 rows/s)',
      unit: 'ms',
      value: summarize([p50]),
      target: 'p50 ≤ 25 ms, p99 ≤ 100 ms',
      met: p50 <= 25 && p99 <= 100,
      extra: { p50Ms: p50, p90Ms: percentile(s.latencies, 90), p99Ms: p99, maxMs: Math.max(...s.latencies), rows: inserted, seconds: LATENCY_SECONDS },
      daemons: { tailer: daemon },
    });
  } finally {
    await client.end();
    await tailer.stop();
    await b.pool.query('DELETE FROM walgate.webhooks WHERE id = $1', [sub]);
  }
}

const SCALING_ROWS = Number(process.env.BENCH_SCALING_ROWS ?? 20_000);

/**
 * More processes, more capacity: a receiver that answers after 50 ms bounds what one process
 * sends (its in-flight cap per subscription over the latency); the stream spills what it cannot
 * send soon to the retry queue, which a standby drains too. SCALING_ROWS rows written at once;
 * the time from the first insert until the receiver has every one, with one tailer process and
 * with two.
 */
async function scaling(b: Bench): Promise<void> {
  await b.pool.query('CREATE TABLE IF NOT EXISTS bench_master.slow (id bigserial PRIMARY KEY, payload text)');
  const client = new pg.Client({ connectionString: b.clusterUrl });
  await client.connect();
  const rate: Record<number, number> = {};
  const daemons: Record<string, { cpuPercent: number; peakRssMb: number; eventLoopP99Ms: number }> = {};
  try {
    for (const processes of [1, 2]) {
      const path = `/slow${processes}`;
      const sub = await insertSubscription(b.ctx, {
        projectId: 'bench', environment: 'master', schema: 'bench_master', table: 'slow', events: ['INSERT'], url: `${b.receiver.url}${path}`, secret: b.secret,
      });
      const tailers = [];
      try {
        for (let i = 0; i < processes; i++) tailers.push(await b.startTailer());
        await b.receiver.reset([path]);
        await sleep(6000); // the second one stands by, and each has counted its peers (every 5 s)
        for (const t of tailers) await t.daemon.beginRun();
        const t0 = performance.now();
        for (let i = 0; i < SCALING_ROWS; i += 200) {
          await client.query(`INSERT INTO bench_master.slow (payload) SELECT $1 FROM generate_series(1, 200)`, [PAYLOAD]);
        }
        const s = await waitForAll(b, SCALING_ROWS, 120_000);
        rate[processes] = SCALING_ROWS / ((performance.now() - t0) / 1000);
        checkCorrect(s, SCALING_ROWS, `scaling, ${processes} process(es)`);
        for (const [i, t] of tailers.entries()) daemons[`${processes} process(es): tailer ${i + 1}`] = await t.daemon.endRun();
      } finally {
        for (const t of tailers) await t.stop();
        await b.pool.query('DELETE FROM walgate.webhooks WHERE id = $1', [sub]);
      }
    }
  } finally {
    await client.end();
  }
  const ratio = rate[2]! / rate[1]!;
  b.record({
    path: `receiver with 50 ms latency: two tailer processes (${SCALING_ROWS.toLocaleString('en')} rows at once)`,
    unit: 'deliveries/s',
    value: summarize([rate[2]!]),
    baseline: { name: 'one tailer process, same receiver', value: summarize([rate[1]!]) },
    ratio: round(ratio),
    target: 'two processes ≥ 1.7× one',
    met: ratio >= 1.7,
    daemons,
  });
}

/**
 * The baseline of the drain: the same changes streamed from a slot of their own over the
 * replication protocol by the library's own pgoutput reader, doing nothing but count them.
 */
async function rawSlotRead(b: Bench, slot: string, expected: number): Promise<number> {
  const service = new LogicalReplicationService({ connectionString: b.clusterUrl }, { acknowledge: { auto: true, timeoutSeconds: 0 } });
  const plugin = new PgoutputPlugin({ protoVersion: 1, publicationNames: [PUBLICATION] });
  let n = 0;
  const started = performance.now();
  await withDeadline(
    new Promise<void>((resolve, reject) => {
      service.on('data', (_lsn: string, msg: { tag: string }) => {
        if (msg.tag === 'insert' && ++n === expected) resolve();
      });
      service.on('error', reject);
      service.subscribe(plugin, slot).catch(reject);
    }),
    DRAIN_DEADLINE_MS,
    'raw slot read',
  ).catch(async (err: unknown) => {
    await service.stop().catch(() => undefined);
    throw new Error(`${(err as Error).message} (${n} of ${expected} inserts read)`);
  });
  const rate = expected / ((performance.now() - started) / 1000);
  await service.stop();
  return rate;
}

/**
 * A backlog written while no tailer ran, then read by a starting one until its slot passes the
 * end: with every change delivered (`selectivity` 1), or with a filter that lets 1 in
 * `selectivity` through (the tailer reads and matches every change, and delivers the few). Its
 * baseline reads the same changes raw.
 */
async function drain(b: Bench, selectivity: number): Promise<void> {
  const table = `bench_master.backlog${selectivity}`;
  await b.pool.query(`CREATE TABLE IF NOT EXISTS ${table} (id bigserial PRIMARY KEY, payload text, pick int)`);
  const client = new pg.Client({ connectionString: b.clusterUrl });
  await client.connect();
  const raw: number[] = [];
  const rates: number[] = [];
  let peakRss = 0;
  let daemon = { cpuPercent: 0, peakRssMb: 0, eventLoopP99Ms: 0 };
  const expected = DRAIN_ROWS / selectivity;
  try {
    for (let run = 0; run < DRAIN_RUNS; run++) {
      const path = `/backlog${selectivity}`;
      const sub = await insertSubscription(b.ctx, {
        projectId: 'bench',
        environment: 'master',
        schema: 'bench_master',
        table: table.split('.')[1]!,
        events: ['INSERT'],
        url: `${b.receiver.url}${path}`,
        secret: b.secret,
        filter: selectivity === 1 ? null : { pick: 0 },
      });
      await b.receiver.reset([path]);
      // The same changes, read raw through a slot of their own: the baseline.
      await client.query(`SELECT pg_create_logical_replication_slot('walgate_bench_raw', 'pgoutput')`);
      for (let i = 0; i < DRAIN_ROWS; i += 1000) {
        await client.query(`INSERT INTO ${table} (payload, pick) SELECT $1, g % $2 FROM generate_series(1, 1000) g`, [PAYLOAD, selectivity]);
      }
      const end = (await client.query(`SELECT pg_current_wal_insert_lsn()::text AS l`)).rows[0].l as string;
      raw.push(await rawSlotRead(b, 'walgate_bench_raw', DRAIN_ROWS));
      await dropSlot(client, 'walgate_bench_raw');
      const tailer = await b.startTailer();
      await tailer.daemon.beginRun();
      const t0 = performance.now();
      // Done when the tailer's slot is acknowledged past the backlog: the slot is acknowledged only
      // up to what is delivered and recorded (the receiver's count below checks it). Not
      // tailer_state.processed_lsn: an idle keepalive moves the slot past the last commit, never
      // that row, and the wait hung.
      await until(
        async () => {
          const { rows } = await client.query(
            `SELECT coalesce(bool_or(confirmed_flush_lsn >= $1::pg_lsn), false) AS done, max(confirmed_flush_lsn)::text AS at
               FROM pg_replication_slots WHERE database = current_database() AND slot_name <> 'walgate_bench_raw'`,
            [end],
          );
          return { done: rows[0].done as boolean, state: `slot confirmed at ${rows[0].at ?? 'no slot'}, backlog ends at ${end}` };
        },
        DRAIN_DEADLINE_MS,
        'drain',
      );
      rates.push(DRAIN_ROWS / ((performance.now() - t0) / 1000));
      daemon = await tailer.daemon.endRun();
      peakRss = Math.max(peakRss, daemon.peakRssMb);
      await tailer.stop();
      checkCorrect(await waitForAll(b, expected, 30_000), expected, 'drain');
      await client.query('DELETE FROM walgate.webhooks WHERE id = $1', [sub]);
      await client.query(`TRUNCATE ${table}`);
    }
  } finally {
    await client.end();
  }
  const ratio = summarize(rates).median / summarize(raw).median;
  const which = selectivity === 1 ? 'every change delivered' : `1 in ${selectivity} matched by a filter and delivered`;
  b.record({
    path: `backlog drain (${DRAIN_ROWS.toLocaleString('en')} rows written with the tailer stopped; ${which})`,
    unit: 'changes/s',
    value: summarize(rates),
    baseline: { name: 'raw pgoutput read of the same changes (pg-logical-replication client, counting inserts)', value: summarize(raw) },
    ratio: round(ratio),
    target: 'drain ≥ 0.3× the raw read rate; tailer peak RSS ≤ 300 MB',
    met: ratio >= 0.3 && peakRss <= 300,
    extra: { tailerPeakRssMb: peakRss, delivered: expected },
    daemons: { tailer: daemon },
  });
}
