import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { insertSubscription } from '../../test/support/subscriptions.js';
import type { Bench } from './run.js';
import { round, summarize } from './stats.js';
import { waitForAll, writer } from './wal-paths.js';
import { cpuWindow, processCpuUs } from './cpu.js';

// What keeping every delivery's body and request headers costs (WEBHOOK_KEEP_PAYLOADS): WAL →
// delivered with it off and on, in alternating rounds against the same receiver and 1 KB rows,
// and the bytes a delivery's row takes either way. The kept request goes in the row a delivery
// writes anyway, so the cost is bytes in that write, not an extra statement.

const SECONDS = Number(process.env.BENCH_PAYLOAD_SECONDS ?? 15);
const ROUNDS = Number(process.env.BENCH_PAYLOAD_ROUNDS ?? 2);
const TABLE = 'bench_master.kept';

interface Round {
  rate: number;
  /** CPU per delivery over the window, µs: the tailer and the Postgres cluster (what keeping can cost). */
  tailerCpuUs: number;
  postgresCpuUs: number;
  /** Average bytes of a delivery's row (pg_column_size of the row), and of what keeping adds to it. */
  rowBytes: number;
  keptBytes: number;
  /** The body's length as sent, for scale. */
  bodyBytes: number;
}

async function measure(b: Bench, keep: boolean, n: number): Promise<Round> {
  const path = `/kept-${keep}-${n}`;
  const webhookId = await insertSubscription(b.ctx, {
    projectId: 'bench',
    environment: 'master',
    schema: 'bench_master',
    table: 'kept',
    events: ['INSERT'],
    url: `${b.receiver.url}${path}`,
    secret: b.secret,
  });
  const tailer = await b.startTailer({ WEBHOOK_KEEP_PAYLOADS: String(keep) });
  const client = new pg.Client({ connectionString: b.clusterUrl });
  await client.connect();
  try {
    await b.receiver.reset([path]);
    const w = writer(client, TABLE, 1, async () => (await b.receiver.stats()).received);
    await sleep(2000); // warm-up
    const start = (await b.receiver.stats()).received;
    const cpu = await cpuWindow({ tailer: () => processCpuUs(tailer.daemon.child.pid!), postgres: b.postgresCpuUs });
    await sleep(SECONDS * 1000);
    const delivered = (await b.receiver.stats()).received - start;
    const perDelivery = await cpu.end(delivered);
    const rate = delivered / SECONDS;
    const inserted = await w.stop();
    await waitForAll(b, inserted);
    await tailer.stop();
    const { rows } = await b.pool.query<{ row: number; kept: number; body: number }>(
      `SELECT avg(pg_column_size(d.*))::float AS row,
              avg(coalesce(pg_column_size(d.payload), 0) + coalesce(pg_column_size(d.request_headers), 0))::float AS kept,
              coalesce(avg(octet_length(d.payload)), 0)::float AS body
         FROM walgate.deliveries d WHERE d.webhook_id = $1`,
      [webhookId],
    );
    return {
      rate,
      tailerCpuUs: perDelivery.tailer!,
      postgresCpuUs: perDelivery.postgres!,
      rowBytes: rows[0]!.row,
      keptBytes: rows[0]!.kept,
      bodyBytes: rows[0]!.body,
    };
  } finally {
    await client.end();
    // The next round's tailer must not deliver this subscription's rows too.
    await b.pool.query('DELETE FROM walgate.webhooks WHERE id = $1', [webhookId]);
  }
}

async function payloadCost(b: Bench): Promise<void> {
  await b.pool.query(`CREATE TABLE IF NOT EXISTS ${TABLE} (id bigserial PRIMARY KEY, payload text)`);
  const off: Round[] = [];
  const on: Round[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    off.push(await measure(b, false, i));
    on.push(await measure(b, true, i));
  }
  const kept = summarize(on.map((r) => r.rate));
  const plain = summarize(off.map((r) => r.rate));
  const ratio = kept.median / plain.median;
  const avg = (rs: Round[], k: keyof Round) => Math.round(rs.reduce((a, r) => a + r[k], 0) / rs.length);
  b.record({
    path: 'WAL → delivered, payload and request headers kept (WEBHOOK_KEEP_PAYLOADS=true), 1 KB rows',
    unit: 'deliveries/s',
    value: kept,
    baseline: { name: 'the same with WEBHOOK_KEEP_PAYLOADS=false', value: plain },
    ratio: round(ratio),
    target: '≥ 0.9× without keeping',
    met: ratio >= 0.9,
    extra: {
      windowSeconds: SECONDS,
      rounds: ROUNDS,
      rowBytesKept: avg(on, 'rowBytes'),
      rowBytesNotKept: avg(off, 'rowBytes'),
      keptBytesPerDelivery: avg(on, 'keptBytes'),
      bodyBytesPerDelivery: avg(on, 'bodyBytes'),
      // CPU per delivery is steadier than deliveries/s on a shared machine: the cost itself.
      tailerCpuUsKept: avg(on, 'tailerCpuUs'),
      tailerCpuUsNotKept: avg(off, 'tailerCpuUs'),
      postgresCpuUsKept: avg(on, 'postgresCpuUs'),
      postgresCpuUsNotKept: avg(off, 'postgresCpuUs'),
    },
  });
}

/** The payload-keeping path by name (BENCH_ONLY=payloads). */
export function payloadPaths(b: Bench): Array<[string, () => Promise<void>]> {
  return [['payloads', () => payloadCost(b)]];
}
