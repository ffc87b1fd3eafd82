import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { insertSubscription } from '../../test/support/subscriptions.js';
import { until } from './processes.js';
import type { Bench, DaemonFigures } from './run.js';
import { round, summarize } from './stats.js';

// The retry queue's drain rate against the fresh stream's (issue 35: "the retry queue drains at
// ≥ 0.5× the fresh stream's rate, ordered and unordered"). CHANGES updates over ROWS rows are
// delivered once with the receiver up (the fresh stream: from the first write until the receiver
// has them all), and once written while the receiver answers 503 — every change parked in the
// retry queue, a row-ordered row's later changes behind its first — then the receiver comes
// back: the rate from its first delivery after the return to its last. Same tailer, same
// settings, same rows, in turn for ordering "none" and "row".

const ROWS = 1000;
const CHANGES = 20_000;
const ROUNDS = 2;
const PAYLOAD = 'x'.repeat(1000);
const DEADLINE_MS = 180_000;
/**
 * Short waits so that parked changes come due soon after the return (the drain is measured, not
 * the schedule), and a span (20 attempts 2 s apart) that outlasts the parking: nothing goes dead.
 */
const SETTINGS = {
  WEBHOOK_RETRY_DELAYS_MS: [0, ...Array.from({ length: 19 }, () => 2000)].join(','),
  WEBHOOK_BREAKER_COOLDOWN_MS: '1000',
};

/** Writes CHANGES updates, ROWS rows per statement (each bumps every row's version once). */
async function write(client: pg.Client): Promise<void> {
  for (let i = 0; i < CHANGES; i += ROWS) await client.query('UPDATE bench_master.drained SET version = version + 1');
}

async function received(b: Bench): Promise<number> {
  return (await b.receiver.stats()).unique;
}

/** Deliveries/s through the fresh stream, and through the retry queue after an outage. */
async function round_(b: Bench, client: pg.Client, sub: string, path: string, ordered: boolean): Promise<{ fresh: number; retry: number }> {
  await b.receiver.reset([path]);
  const started = performance.now();
  await write(client);
  await until(
    async () => ({ done: (await received(b)) >= CHANGES, state: `fresh: ${await received(b)} of ${CHANGES}` }),
    DEADLINE_MS,
    'retry drain (fresh)',
  );
  const fresh = CHANGES / ((performance.now() - started) / 1000);
  await b.pool.query('DELETE FROM walgate.deliveries WHERE webhook_id = $1', [sub]);

  await b.receiver.reset([path]);
  await b.receiver.down([path]);
  await write(client);
  // Every change parked: its delivery row written, none of them delivered.
  await until(
    async () => {
      const { rows } = await b.pool.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM walgate.deliveries WHERE webhook_id = $1 AND status IN ('pending', 'retrying')`,
        [sub],
      );
      return { done: rows[0]!.n >= CHANGES, state: `${rows[0]!.n} of ${CHANGES} parked` };
    },
    DEADLINE_MS,
    'retry drain (parking)',
  );
  await b.receiver.down([]);
  let first = 0;
  await until(
    async () => {
      const n = await received(b);
      if (n > 0 && first === 0) first = performance.now();
      return { done: n >= CHANGES, state: `retry queue: ${n} of ${CHANGES}` };
    },
    DEADLINE_MS,
    'retry drain (queue)',
  );
  const retry = CHANGES / ((performance.now() - first) / 1000);
  const s = await b.receiver.stats();
  if (s.badSignatures > 0) throw new Error(`retry drain: ${s.badSignatures} deliveries had a bad signature`);
  if (ordered && s.regressions > 0) throw new Error(`retry drain: ${s.regressions} rows went back to an older version`);
  await b.pool.query('DELETE FROM walgate.deliveries WHERE webhook_id = $1', [sub]);
  return { fresh, retry };
}

async function measure(b: Bench, ordering: 'none' | 'row'): Promise<void> {
  const path = `/drained-${ordering}`;
  const sub = await insertSubscription(b.ctx, {
    projectId: 'bench',
    environment: 'master',
    schema: 'bench_master',
    table: 'drained',
    events: ['UPDATE'],
    url: `${b.receiver.url}${path}`,
    secret: b.secret,
    ordering,
  });
  const tailer = await b.startTailer(SETTINGS);
  const client = new pg.Client({ connectionString: b.clusterUrl });
  await client.connect();
  const fresh: number[] = [];
  const retry: number[] = [];
  let daemon: DaemonFigures | undefined;
  try {
    await tailer.daemon.beginRun();
    for (let r = 0; r < ROUNDS; r++) {
      const rates = await round_(b, client, sub, path, ordering === 'row');
      fresh.push(rates.fresh);
      retry.push(rates.retry);
      await sleep(500);
    }
    daemon = await tailer.daemon.endRun();
  } finally {
    await client.end();
    await tailer.stop();
    await b.pool.query('DELETE FROM walgate.webhooks WHERE id = $1', [sub]);
  }
  const ratio = round(summarize(retry).median / summarize(fresh).median);
  b.record({
    path: `retry queue drain after an outage, ordering "${ordering}" (${CHANGES.toLocaleString('en')} updates over ${ROWS.toLocaleString('en')} rows)`,
    unit: 'deliveries/s',
    value: summarize(retry),
    baseline: { name: 'the same changes through the fresh stream, same tailer and run', value: summarize(fresh) },
    ratio,
    target: '≥ 0.5× the fresh stream',
    met: ratio >= 0.5,
    extra: { rows: ROWS, changes: CHANGES, rounds: ROUNDS, signaturesChecked: true, ...SETTINGS },
    daemons: { tailer: daemon! },
  });
}

async function retryDrain(b: Bench): Promise<void> {
  await b.pool.query(`CREATE TABLE IF NOT EXISTS bench_master.drained (id int PRIMARY KEY, version int NOT NULL, payload text)`);
  await b.pool.query(`INSERT INTO bench_master.drained SELECT g, 0, $1 FROM generate_series(1, ${ROWS}) g ON CONFLICT DO NOTHING`, [PAYLOAD]);
  await measure(b, 'none');
  await measure(b, 'row');
}

/** BENCH_ONLY=retry-drain. */
export function retryDrainPaths(b: Bench): Array<[string, () => Promise<void>]> {
  return [['retry-drain', () => retryDrain(b)]];
}
