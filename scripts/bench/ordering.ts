import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { insertSubscription } from '../../test/support/subscriptions.js';
import type { ReceiverStats } from './receiver.js';
import type { Bench, DaemonFigures } from './run.js';
import { until } from './processes.js';
import { round, summarize } from './stats.js';

// Row ordering's cost (issue 17): UPDATE throughput over 100 rows — each update bumps a row's
// version — delivered to one subscription with ordering "none", then with "row", to the same
// receiver over the same window. With "row" a row has one delivery in flight at a time; 100 rows
// still keep the subscription's 32 request slots busy, so the target is half the unordered rate.

const ROWS = 100;
const RUNS = 3;
const WINDOW_SECONDS = Math.max(2, Math.ceil(Number(process.env.BENCH_WAL_SECONDS ?? 20) / 2));
const WARM_UP_MS = 2000;
const BACKLOG = 10_000;
/** The longest the deliveries may trail the writes once writing stops. */
const CATCH_UP_MS = 120_000;
const PAYLOAD = 'x'.repeat(1000);

/** Rates (deliveries/s) of RUNS consecutive windows of one sustained run with this ordering. */
async function measure(
  b: Bench,
  ordering: 'none' | 'row',
): Promise<{ rates: number[]; updates: number; duplicates: number; daemon: DaemonFigures }> {
  const path = `/ordering-${ordering}`;
  const sub = await insertSubscription(b.ctx, {
    projectId: 'bench',
    environment: 'master',
    schema: 'bench_master',
    table: 'versions',
    events: ['UPDATE'],
    url: `${b.receiver.url}${path}`,
    secret: b.secret,
    ordering,
  });
  const tailer = await b.startTailer();
  const client = new pg.Client({ connectionString: b.clusterUrl });
  await client.connect();
  try {
    await b.receiver.reset([path]);
    let updates = 0;
    let stopped = false;
    // Every statement bumps every row once: 100 changes, one per row, as fast as deliveries keep up.
    const writing = (async () => {
      while (!stopped) {
        if (updates - (await b.receiver.stats()).received > BACKLOG) {
          await sleep(20);
          continue;
        }
        await client.query('UPDATE bench_master.versions SET version = version + 1');
        updates += ROWS;
      }
    })();
    await sleep(WARM_UP_MS);
    await tailer.daemon.beginRun();
    const rates: number[] = [];
    for (let run = 0; run < RUNS; run++) {
      const start = (await b.receiver.stats()).received;
      await sleep(WINDOW_SECONDS * 1000);
      rates.push(((await b.receiver.stats()).received - start) / WINDOW_SECONDS);
    }
    const daemon = await tailer.daemon.endRun();
    stopped = true;
    await writing;
    let s: ReceiverStats | undefined;
    await until(
      async () => {
        s = await b.receiver.stats();
        return { done: s.unique >= updates, state: `receiver has ${s.unique} of ${updates} changes` };
      },
      CATCH_UP_MS,
      `ordering ${ordering}`,
    );
    if (s!.badSignatures > 0) throw new Error(`ordering ${ordering}: ${s!.badSignatures} deliveries had a bad signature`);
    if (s!.unique !== updates) throw new Error(`ordering ${ordering}: ${s!.unique} distinct events received, ${updates} expected`);
    return { rates, updates, duplicates: s!.received - s!.unique, daemon };
  } finally {
    await client.end();
    await tailer.stop();
    await b.pool.query('DELETE FROM walgate.webhooks WHERE id = $1', [sub]);
  }
}

async function rowOrdering(b: Bench): Promise<void> {
  await b.pool.query(`CREATE TABLE IF NOT EXISTS bench_master.versions (id int PRIMARY KEY, version int NOT NULL, payload text)`);
  await b.pool.query(`INSERT INTO bench_master.versions SELECT g, 0, $1 FROM generate_series(1, ${ROWS}) g ON CONFLICT DO NOTHING`, [PAYLOAD]);
  const none = await measure(b, 'none');
  const row = await measure(b, 'row');
  const ratio = summarize(row.rates).median / summarize(none.rates).median;
  b.record({
    path: `row ordering, ${ROWS} rows (updates)`,
    unit: 'deliveries/s',
    value: summarize(row.rates),
    baseline: { name: 'ordering "none", same rows, receiver and window', value: summarize(none.rates) },
    ratio: round(ratio),
    target: '≥ 0.5× unordered',
    met: ratio >= 0.5,
    extra: {
      windowSeconds: WINDOW_SECONDS,
      windows: RUNS,
      rows: ROWS,
      rowBytes: 1000,
      updates: { none: none.updates, row: row.updates },
      duplicates: { none: none.duplicates, row: row.duplicates },
      signaturesChecked: true,
      unorderedTailer: none.daemon,
    },
    daemons: { tailer: row.daemon },
  });
}

/** The ordering path by name (BENCH_ONLY=ordering). */
export function orderingPaths(b: Bench): Array<[string, () => Promise<void>]> {
  return [['ordering', () => rowOrdering(b)]];
}
