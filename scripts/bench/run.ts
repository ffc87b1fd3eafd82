// `npm run bench`: every hot path next to a baseline measured in the same run, on loopback.
// Writes bench/results.json and bench/results.md (the table the README shows).
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { cpus, tmpdir, totalmem } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { hashPassword } from '../../src/auth/passwords.js';
import { loadConfig } from '../../src/core/config.js';
import { createContext, type Context } from '../../src/core/context.js';
import { freePort, startEmbeddedPostgres } from '../../src/core/db/embedded.js';
import { migrate } from '../../src/core/db/migrate.js';
import type { Pool } from '../../src/core/db/pool.js';
import { createLogger } from '../../src/core/log.js';
import { provisionEnvironment } from '../../src/auth/provision.js';
import { testCertificates } from '../../test/support/tls.js';
import { login, protectedRead, refresh } from './http-paths.js';
import { refreshWithOrganization } from './organizations.js';
import { tokensWithClaims } from './claims.js';
import { Daemon, onShutdown, runShutdown, stopChildren, stopOnSignals } from './processes.js';
import { startCountingReceiver, type CountingReceiver } from './receiver.js';
import type { Summary } from './stats.js';
import { walPaths } from './wal-paths.js';
import { deliveryRatePaths } from './delivery-rate.js';
import { historyModePaths } from './history-modes.js';
import { batchingPaths } from './batching.js';
import { outagePaths } from './outage.js';
import { retryDrainPaths } from './retry-drain.js';
import { postgresCpuUs } from './cpu.js';
import { orderingPaths } from './ordering.js';
import { payloadPaths } from './payloads.js';
import { filterPaths } from './filters.js';
import { healthCall } from './health.js';
import { noisyNeighbour } from './noisy-neighbour.js';
import { busPaths } from './bus.js';
import { destinationPaths } from './destinations.js';

export interface DaemonFigures {
  cpuPercent: number;
  peakRssMb: number;
  eventLoopP99Ms: number;
}

export interface Result {
  path: string;
  unit: string;
  value: Summary;
  baseline?: { name: string; value: Summary };
  ratio?: number;
  target: string;
  met: boolean;
  extra?: Record<string, unknown>;
  daemons?: Record<string, DaemonFigures>;
  /** The day it was measured (YYYY-MM-DD): a BENCH_ONLY run keeps the other paths' earlier rows. */
  measured?: string;
}

export interface Bench {
  ctx: Context;
  pool: Pool;
  clusterUrl: string;
  /** CPU the whole Postgres cluster has used so far, in µs. */
  postgresCpuUs(): Promise<number>;
  redisUrl: string | undefined;
  secret: string;
  ca: string;
  receiver: CountingReceiver;
  freePort(): Promise<number>;
  passwordHash(): Promise<string>;
  startApi(store: 'redis' | 'postgres'): Promise<{ url: string; daemon: Daemon; stop(): Promise<void> }>;
  /** `env`: settings for this tailer only (e.g. WEBHOOK_KEEP_PAYLOADS=false). */
  startTailer(env?: Record<string, string>): Promise<{ daemon: Daemon; stop(): Promise<void> }>;
  /** A delivery worker of the bus (`env` holds DELIVERY_BUS); `url` is its health listener. */
  startWorker(env: Record<string, string>): Promise<{ daemon: Daemon; url: string; stop(): Promise<void> }>;
  record(result: Result): void;
}

const started = Date.now();
const results: Result[] = [];
const dir = await mkdtemp(path.join(tmpdir(), 'walgate-bench-'));
const log = (msg: string) => process.stderr.write(`[bench ${Math.round((Date.now() - started) / 1000)}s] ${msg}\n`);

// SIGINT / SIGTERM: the receiver, the daemons and Postgres stop with the bench.
stopOnSignals(log);
onShutdown(() => rm(dir, { recursive: true, force: true }));
log('starting Postgres');
const cluster = await startEmbeddedPostgres({
  dir,
  settings: { max_wal_size: '8GB', shared_buffers: '512MB', wal_writer_delay: '10ms', max_slot_wal_keep_size: '20GB' },
});
onShutdown(() => cluster.stop());
const kek = randomBytes(32).toString('base64');
const secret = `bench-secret-${randomBytes(8).toString('hex')}`;
const config = loadConfig({ KEY_ENCRYPTION_KEY: kek, DATA_DIR: dir, LOG_LEVEL: 'warn' });
const ctx = await createContext(config, cluster.url, { log: createLogger('warn') });
onShutdown(() => ctx.close());
await migrate(ctx.pool);
await provisionEnvironment(ctx, { projectId: 'bench', name: 'master' });
const { ca, cert, key } = await testCertificates();
const caFile = path.join(dir, 'ca.pem');
await writeFile(caFile, ca);

const receiver = await startCountingReceiver(secret, { cert, key });

let hashed: Promise<string> | undefined;
const daemonEnv = (extra: Record<string, string>) => ({
  ...process.env,
  NODE_ENV: 'production',
  DATABASE_URL: cluster.url,
  KEY_ENCRYPTION_KEY: kek,
  DATA_DIR: dir,
  LOG_LEVEL: 'warn',
  WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
  NODE_EXTRA_CA_CERTS: caFile,
  REDIS_URL: '',
  ...extra,
});

const bench: Bench = {
  ctx,
  pool: ctx.pool,
  clusterUrl: cluster.url,
  postgresCpuUs: () => postgresCpuUs(path.join(dir, 'pg')),
  redisUrl: process.env.REDIS_URL,
  secret,
  ca,
  receiver,
  freePort,
  passwordHash: () => (hashed ??= hashPassword('correct horse battery staple 42')),
  async startApi(store) {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const daemon = await Daemon.start(
      'api',
      daemonEnv({ PORT: String(port), HOST: '127.0.0.1', TRUST_PROXY: '1', REDIS_URL: store === 'redis' ? process.env.REDIS_URL! : '' }),
      `${url}/metrics`,
    );
    return { url, daemon, stop: () => daemon.stop() };
  },
  async startTailer(env = {}) {
    const port = await freePort();
    const daemon = await Daemon.start('tailer', daemonEnv({ TAILER_PORT: String(port), HOST: '127.0.0.1', ...env }), `http://127.0.0.1:${port}/metrics`);
    return { daemon, stop: () => daemon.stop() };
  },
  async startWorker(env) {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const daemon = await Daemon.start('worker', daemonEnv({ WORKER_PORT: String(port), HOST: '127.0.0.1', ...env }), `${url}/metrics`);
    return { daemon, url, stop: () => daemon.stop() };
  },
  record(result) {
    results.push(result);
    const ratio = result.ratio === undefined ? '' : ` (${result.ratio}× baseline)`;
    log(`${result.path}: ${Math.round(result.value.median)} ${result.unit}${ratio} ${result.met ? 'meets' : 'MISSES'} ${result.target}`);
  },
};

/** Paths that run only when BENCH_ONLY names them. */
const ON_REQUEST = new Set(['outage-batched']);

/** Paths that ran to the end this time: an earlier failure row of theirs is dropped. */
const succeeded = new Set<string>();

try {
  // BENCH_ONLY=read,refresh (names below) runs some paths while working on them; the default runs all.
  const only = process.env.BENCH_ONLY?.split(',');
  const paths: Array<[string, () => Promise<void>]> = [
    ['read', () => protectedRead(bench)],
    ['login', () => login(bench)],
    ['refresh', () => refresh(bench, results.find((r) => r.path.includes('postgres revocation list'))?.value.median)],
    ['organizations', () => refreshWithOrganization(bench)],
    ['claims', () => tokensWithClaims(bench)],
    ...deliveryRatePaths(bench),
    ...historyModePaths(bench),
    ...batchingPaths(bench),
    ...walPaths(bench),
    ...orderingPaths(bench),
    ...payloadPaths(bench),
    ...filterPaths(bench),
    ['health', () => healthCall(bench)],
    ['noisy-neighbour', () => noisyNeighbour(bench)],
    ...busPaths(bench),
    ...destinationPaths(bench),
    ...retryDrainPaths(bench),
    // Last: a catch-up that falls short leaves a retry backlog that would weigh on the paths after it.
    ...outagePaths(bench),
  ];
  for (const [name, run] of paths) {
    if (only && !only.includes(name)) continue;
    // A second 15-minute outage only when asked for by name (BENCH_ONLY=outage-batched).
    if (!only && ON_REQUEST.has(name)) continue;
    log(name);
    try {
      await run();
      succeeded.add(name);
    } catch (err) {
      // A path that fails is recorded as failed; the others still run and are written.
      log(`${name} FAILED: ${(err as Error).message}`);
      results.push({ path: name, unit: '—', value: { median: 0, min: 0, max: 0, runs: [] }, target: `failed: ${(err as Error).message}`, met: false });
    }
  }
} finally {
  // The same steps as on a signal: the receiver and any daemon left, then ctx, Postgres, the directory.
  await stopChildren();
  await runShutdown(log);
}

const machine = { cpus: cpus().length, cpuModel: cpus()[0]?.model, memoryGb: Math.round(totalmem() / 1024 ** 3), node: process.version };
const out = fileURLToPath(new URL('../../../bench/', import.meta.url));
await mkdir(out, { recursive: true });

/**
 * The rows to write: this run's, and with BENCH_ONLY the committed rows of the paths it did not
 * run, each with the day it was measured — a run of a few paths updates their rows and leaves the
 * others' figures in the table rather than dropping them.
 */
async function rowsToWrite(fresh: Result[]): Promise<Result[]> {
  const today = new Date().toISOString().slice(0, 10);
  const dated = fresh.map((r) => ({ ...r, measured: today }));
  if (!process.env.BENCH_ONLY) return dated;
  const before = await readFile(path.join(out, 'results.json'), 'utf8').then(
    (text) => JSON.parse(text) as { date: string; results: Result[] },
    () => undefined,
  );
  if (!before) return dated;
  const byPath = new Map(dated.map((r) => [r.path, r]));
  const kept = before.results.filter((r) => !(succeeded.has(r.path) && r.target.startsWith('failed:'))).map((r) => byPath.get(r.path) ?? { ...r, measured: r.measured ?? before.date.slice(0, 10) });
  return [...kept, ...dated.filter((r) => !before.results.some((b) => b.path === r.path))];
}
const written = await rowsToWrite(results);
await writeFile(
  path.join(out, 'results.json'),
  JSON.stringify({ date: new Date().toISOString(), machine, seconds: Math.round((Date.now() - started) / 1000), results: written }, null, 2) + '\n',
);

/** Where the CPU went per delivery, by process, for walgate and each baseline of the same rounds. */
function cpuTable(rs: Result[]): string[] {
  const rows = rs.filter((r) => r.extra?.cpuUsPerDelivery);
  if (rows.length === 0) return [];
  return [
    `| CPU µs per delivery | consumer | consumer process | receiver | Postgres | bench (writer) | total |`,
    `|---|---|---|---|---|---|---|`,
    ...rows.flatMap((r) =>
      Object.entries(r.extra!.cpuUsPerDelivery as Record<string, Record<string, number>>).map(([who, c]) => {
        const total = Object.values(c).reduce((a, n) => a + n, 0);
        return `| ${r.path} | ${who} | ${c.consumer} | ${c.receiver} | ${c.postgres} | ${c['bench (writer)']} | ${total} |`;
      }),
    ),
    '',
  ];
}

const fmt = (n: number) => (n >= 100 ? Math.round(n).toLocaleString('en') : String(Math.round(n * 10) / 10));
const lines = [
  `| path | median (min–max) | baseline median | ratio | target | met | measured |`,
  `|---|---|---|---|---|---|---|`,
  ...written.map((r) => {
    const value = `${fmt(r.value.median)} ${r.unit} (${fmt(r.value.min)}–${fmt(r.value.max)})`;
    const extra = r.extra && 'p99Ms' in r.extra && typeof r.extra.p99Ms === 'number' ? `; p99 ${fmt(r.extra.p99Ms)} ms` : '';
    const base = r.baseline ? `${fmt(r.baseline.value.median)} (${r.baseline.name})` : '—';
    return `| ${r.path} | ${value}${extra} | ${base} | ${r.ratio ?? '—'} | ${r.target} | ${r.met ? 'yes' : '**no**'} | ${r.measured} |`;
  }),
  '',
  `| path | daemon | CPU % | peak RSS MB | event-loop p99 ms |`,
  `|---|---|---|---|---|`,
  ...written.flatMap((r) => Object.entries(r.daemons ?? {}).map(([name, d]) => `| ${r.path} | ${name} | ${d.cpuPercent} | ${d.peakRssMb} | ${d.eventLoopP99Ms} |`)),
  '',
  ...cpuTable(written),
  `${machine.cpus} × ${machine.cpuModel}, ${machine.memoryGb} GB, Node ${machine.node}; ${new Date().toISOString().slice(0, 10)}; ${Math.round((Date.now() - started) / 1000)} s.`,
];
await writeFile(path.join(out, 'results.md'), lines.join('\n') + '\n');
log(`done: bench/results.json, bench/results.md`);
process.exit(0);
