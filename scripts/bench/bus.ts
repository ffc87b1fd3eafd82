import pg from 'pg';
import { insertSubscription } from '../../test/support/subscriptions.js';
import type { Bench } from './run.js';
import { processCpuUs } from './cpu.js';
import { burst, median, medianCpu, ROWS, RUNS, type Round } from './delivery-rate.js';
import { startNats } from './nats-server.js';
import { until } from './processes.js';
import { round, summarize } from './stats.js';

// The delivery bus (docs/scaling-out.md) against delivery in one process, in the same rounds:
// ROWS INSERTs of 1 KB rows in 1,000-row transactions, first INSERT → the receiver has every one
// (signatures checked, ids counted once), as delivery-rate.ts measures. Each round runs
// - in-process: a tailer alone (no DELIVERY_BUS);
// - the bus with one worker: a tailer publishing to a nats-server of the bench's own (JetStream,
//   file storage, R1), one worker holding every partition;
// - the bus with two workers.
// The daemons are started again for each (one tailer may lead the slot at a time). The CPU per
// delivery adds the tailer's and the workers'; the nats-server's is given beside it. On 2 cores a
// second worker shows the cost of one more process, not a speed-up.

const PARTITIONS = 16;
const WARM_ROWS = 2000;

/** Waits until the workers (their health listeners) hold every partition between them, each some. */
async function partitionsShared(urls: string[]): Promise<void> {
  await until(
    async () => {
      const held = await Promise.all(
        urls.map(async (url) => {
          const body = (await (await fetch(`${url}/readyz`)).json()) as { checks: Array<{ name: string; detail?: { partitions?: number[] } }> };
          return body.checks.find((c) => c.name === 'worker')?.detail?.partitions?.length ?? 0;
        }),
      );
      const total = held.reduce((a, n) => a + n, 0);
      return { done: total === PARTITIONS && held.every((n) => n > 0), state: `partitions held: ${JSON.stringify(held)}` };
    },
    30_000,
    'the workers sharing the partitions',
  );
}

type Mode = 'in-process' | 'bus, 1 worker' | 'bus, 2 workers';

async function deliveryBus(b: Bench): Promise<void> {
  const nats = await startNats(b);
  const table = 'bench_master.bus_rows';
  await b.pool.query(`CREATE TABLE IF NOT EXISTS ${table} (id bigserial PRIMARY KEY, payload text)`);
  const sub = await insertSubscription(b.ctx, {
    projectId: 'bench',
    environment: 'master',
    schema: 'bench_master',
    table: 'bus_rows',
    events: ['INSERT'],
    url: `${b.receiver.url}/bus`,
    secret: b.secret,
  });
  const bus = { DELIVERY_BUS: nats.url, DELIVERY_BUS_STREAM: 'WALGATE_BENCH', DELIVERY_BUS_PARTITIONS: String(PARTITIONS) };
  const client = new pg.Client({ connectionString: b.clusterUrl });
  await client.connect();
  const rounds: Record<Mode, Round[]> = { 'in-process': [], 'bus, 1 worker': [], 'bus, 2 workers': [] };
  const o = { table, path: '/bus', txRows: 1000 };
  try {
    for (let run = 0; run < RUNS; run++) {
      const alone = await b.startTailer();
      try {
        if (run === 0) await burst(b, client, { ...o, rows: WARM_ROWS });
        rounds['in-process'].push(await burst(b, client, { ...o, rows: ROWS, consumerPid: alone.daemon.child.pid! }));
      } finally {
        await alone.stop();
      }
      const tailer = await b.startTailer(bus);
      const workers = [await b.startWorker(bus)];
      try {
        await partitionsShared(workers.map((w) => w.url));
        if (run === 0) await burst(b, client, { ...o, rows: WARM_ROWS });
        const cpuOf = () => ({
          ...Object.fromEntries(workers.map((w, i) => [`worker ${i + 1}`, () => processCpuUs(w.daemon.child.pid!)])),
          'nats-server': () => processCpuUs(nats.pid),
        });
        rounds['bus, 1 worker'].push(await burst(b, client, { ...o, rows: ROWS, consumerPid: tailer.daemon.child.pid!, moreCpu: cpuOf() }));
        workers.push(await b.startWorker(bus));
        await partitionsShared(workers.map((w) => w.url));
        rounds['bus, 2 workers'].push(await burst(b, client, { ...o, rows: ROWS, consumerPid: tailer.daemon.child.pid!, moreCpu: cpuOf() }));
      } finally {
        for (const w of workers) await w.stop();
        await tailer.stop();
      }
    }
  } finally {
    await client.end();
    await b.pool.query('DELETE FROM walgate.webhooks WHERE id = $1', [sub]);
    await nats.stop();
  }
  const walgateCpu = (cpu: Record<string, number>) => (cpu.consumer ?? 0) + (cpu['worker 1'] ?? 0) + (cpu['worker 2'] ?? 0);
  const inProcess = median(rounds['in-process'], 'delivered');
  const inProcessCpu = medianCpu(rounds['in-process']);
  const workload = `${ROWS.toLocaleString('en')} INSERTs in 1,000-row transactions`;
  const inProcessCpuRuns = summarize(rounds['in-process'].map((r) => walgateCpu(r.cpu)));
  for (const mode of ['bus, 1 worker', 'bus, 2 workers'] as const) {
    const value = median(rounds[mode], 'delivered');
    const cpu = medianCpu(rounds[mode]);
    const cpuRuns = summarize(rounds[mode].map((r) => walgateCpu(r.cpu)));
    const cpuRatio = cpuRuns.median / inProcessCpuRuns.median;
    // The CPU table (results.md): the bus's walgate processes together as its consumer.
    const asConsumer = (c: Record<string, number>) => ({ consumer: walgateCpu(c), receiver: c.receiver!, postgres: c.postgres!, 'bench (writer)': c['bench (writer)']! });
    b.record({
      path: `delivery bus (${mode}) vs delivery in one process: CPU per delivery (${workload})`,
      unit: 'µs/delivery',
      value: cpuRuns,
      baseline: { name: 'the tailer delivering alone (no DELIVERY_BUS), same rounds', value: inProcessCpuRuns },
      ratio: round(cpuRatio),
      target: '≤ 1.3× the CPU per delivery in one process (tailer + workers against the tailer alone)',
      met: cpuRatio <= 1.3,
      extra: {
        deliveriesPerSecond: value.median,
        inProcessPerSecond: inProcess.median,
        rateRatio: round(value.median / inProcess.median),
        cpuUsPerDelivery: { [`walgate (${mode}: tailer + workers)`]: asConsumer(cpu), 'walgate (one process)': asConsumer(inProcessCpu) },
        busCpuUsPerDeliveryByProcess: cpu,
        partitions: PARTITIONS,
      },
    });
  }
}

export function busPaths(b: Bench): Array<[string, () => Promise<void>]> {
  return [['bus', () => deliveryBus(b)]];
}
