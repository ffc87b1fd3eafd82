import { expect } from 'chai';
import pg from 'pg';
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { freePort } from '../../src/core/db/embedded.js';
import type { TestApi } from '../support/api.js';
import { testCertificates } from '../support/tls.js';
import type { Context } from '../../src/core/context.js';
import { PAYLOAD_COLUMNS, renderPayload } from '../../src/delivery/payload.js';
import { DeliveryEngine } from '../../src/delivery/engine.js';
import { disableWebhook } from '../../src/webhooks/store.js';
import { WalTailer, type WalTailerOptions } from '../../src/tailer/tailer.js';

export interface StoredDelivery {
  id: string;
  webhookId: string;
  eventId: string;
  eventType: string;
  payload: any;
  payloadText: string;
}

/**
 * A tailer with its delivery engine's stream (no retry-queue worker: tests of the tailer see what
 * it delivered or parked). Subscriptions default to https://127.0.0.1:1, which the SSRF guard
 * refuses, so every delivery is parked with its event: the rows the tests read.
 */
export function startTailer(ctx: Context, databaseUrl: string, options: Partial<WalTailerOptions> = {}): WalTailer {
  const own = options.sink
    ? undefined
    : new DeliveryEngine(ctx, { disableSubscription: (id, reason, at) => disableWebhook(ctx.pool, id, reason, at) });
  const tailer = new WalTailer(ctx, {
    databaseUrl,
    sink: options.sink ?? own!,
    statusIntervalMs: 200,
    standbyPollMs: 100,
    retryMaxMs: 500,
    reportIntervalMs: 60_000,
    ...options,
  });
  tailer.start();
  if (own) {
    const stop = tailer.stop.bind(tailer);
    tailer.stop = async () => {
      await stop();
      await own.stop(1000);
    };
  }
  return tailer;
}

/** Waits until the tailer leads (its slot exists and it streams). */
export async function waitForLeader(tailer: WalTailer, timeoutMs = 10_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (tailer.status().role !== 'leader' || tailer.status().durableLsn === null) {
    if (Date.now() > until) throw new Error(`tailer is not leading: ${JSON.stringify(tailer.status())}`);
    await sleep(20);
  }
}

export async function deliveries(ctx: Context, webhookId?: string): Promise<StoredDelivery[]> {
  const { rows } = await ctx.pool.query(
    `SELECT d.id, d.webhook_id, d.event_type, ${PAYLOAD_COLUMNS}
       FROM walgate.deliveries d JOIN walgate.events e ON e.id = d.event_id JOIN walgate.webhooks w ON w.id = d.webhook_id
      WHERE $1::text IS NULL OR d.webhook_id = $1 ORDER BY d.event_id, d.webhook_id`,
    [webhookId ?? null],
  );
  return rows.map((r) => {
    const payloadText = renderPayload(r);
    return {
      id: r.id,
      webhookId: r.webhook_id,
      eventId: r.event_id,
      eventType: r.event_type,
      payload: JSON.parse(payloadText),
      payloadText,
    };
  });
}

/** Polls until `count` deliveries exist (for the webhook, if given); fails after the time-out. */
export async function waitForDeliveries(ctx: Context, count: number, webhookId?: string, timeoutMs = 10_000): Promise<StoredDelivery[]> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const found = await deliveries(ctx, webhookId);
    if (found.length >= count) return found;
    if (Date.now() > until) throw new Error(`expected ${count} deliveries, found ${found.length}`);
    await sleep(25);
  }
}

/** Waits until the tailer has processed everything written so far (its position passes the WAL end). */
export async function waitUntilCaughtUp(ctx: Context, tailer: WalTailer, timeoutMs = 10_000): Promise<void> {
  const { rows } = await ctx.pool.query<{ lsn: string }>('SELECT pg_current_wal_insert_lsn()::text AS lsn');
  const target = rows[0]!.lsn;
  const until = Date.now() + timeoutMs;
  for (;;) {
    const { rows: r } = await ctx.pool.query<{ ok: boolean }>(
      `SELECT coalesce((SELECT processed_lsn FROM walgate.tailer_state WHERE slot_name = $1) >= $2::pg_lsn, false)
           OR coalesce((SELECT confirmed_flush_lsn FROM pg_replication_slots WHERE slot_name = $1) >= $2::pg_lsn, false) AS ok`,
      [tailer.status().slotName, target],
    );
    if (r[0]!.ok) return;
    if (Date.now() > until) throw new Error(`tailer did not catch up to ${target}: ${JSON.stringify(tailer.status())}`);
    await sleep(25);
  }
}

const TAILER_MAIN = fileURLToPath(new URL('../../src/main/tailer.js', import.meta.url));
const WORKER_MAIN = fileURLToPath(new URL('../../src/main/worker.js', import.meta.url));

/**
 * A tailer daemon as production runs it, against the test's database: its own health port (the
 * default may be taken on a shared machine), its stderr into the test's. `extra` adds settings.
 */
export function spawnTailerDaemon(t: TestApi, extra: Record<string, string> = {}): Promise<ChildProcess> {
  return spawnDaemon(t, TAILER_MAIN, extra);
}

async function spawnDaemon(t: TestApi, main: string, extra: Record<string, string>): Promise<ChildProcess> {
  const env = {
    ...process.env,
    DATABASE_URL: t.database.url,
    KEY_ENCRYPTION_KEY: t.config.keyEncryptionKey!.toString('base64'),
    DATA_DIR: t.config.dataDir,
    LOG_LEVEL: 'warn',
    TAILER_PORT: String(await freePort()),
    WORKER_PORT: String(await freePort()),
    ...extra,
  };
  const child = spawn(process.execPath, [main], { env, stdio: ['ignore', 'ignore', 'pipe'] });
  child.stderr!.on('data', (d: Buffer) => process.stderr.write(d));
  return child;
}

/** The settings of a daemon that delivers to the tests' HTTPS receivers: their CA as an operator would trust it, loopback allowed. */
async function receiverSettings(t: TestApi): Promise<Record<string, string>> {
  const caFile = path.join(t.config.dataDir, 'test-ca.pem');
  await writeFile(caFile, (await testCertificates()).ca);
  return { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', NODE_EXTRA_CA_CERTS: caFile };
}

/**
 * A tailer daemon that delivers to the tests' HTTPS receivers: it trusts their CA as an operator
 * would (`NODE_EXTRA_CA_CERTS`, a file in the test's data directory, written here so that no test
 * depends on another having written it) and may reach loopback addresses.
 */
export async function spawnDeliveringDaemon(t: TestApi, extra: Record<string, string> = {}): Promise<ChildProcess> {
  return spawnTailerDaemon(t, { ...(await receiverSettings(t)), ...extra });
}

/** A delivery worker daemon of the bus (`npm run worker`), delivering to the tests' HTTPS receivers; `extra` holds DELIVERY_BUS. */
export async function spawnWorkerDaemon(t: TestApi, extra: Record<string, string>): Promise<ChildProcess> {
  return spawnDaemon(t, WORKER_MAIN, { ...(await receiverSettings(t)), ...extra });
}

/** The delivery workers' partition locks (bus/worker.ts): per worker (its lock connection's pid), the partitions it holds. */
export async function partitionsHeld(t: TestApi): Promise<Map<number, number>> {
  const { rows } = await t.ctx.pool.query<{ pid: number; n: number }>(
    `SELECT l.pid, count(*)::int AS n FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
      WHERE l.locktype = 'advisory' AND l.granted AND a.application_name = 'walgate-worker-lock' GROUP BY l.pid`,
  );
  return new Map(rows.map((r) => [r.pid, r.n]));
}

/** Waits until a tailer daemon leads: the database's replication slot has an active walsender. */
export async function waitForStreaming(t: TestApi, timeoutMs = 30_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const { rowCount } = await t.ctx.pool.query(
      'SELECT 1 FROM pg_replication_slots WHERE database = current_database() AND active_pid IS NOT NULL',
    );
    if ((rowCount ?? 0) > 0) return;
    if (Date.now() > until) throw new Error('no tailer leads');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** SIGKILLs a daemon (no clean-up of any kind, as a crash) and waits until it is gone. */
export async function killDaemon(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await exited;
}

/**
 * Makes the stopped tailer's slot lose the WAL it needs, as `max_slot_wal_keep_size` does in
 * production: with the setting at 1 MB, `writeRound(round)` writes and the WAL is switched and
 * checkpointed until Postgres marks the slot lost (the setting is put back afterwards).
 */
export async function loseSlot(slotName: string, writeRound: (round: number) => Promise<void>): Promise<void> {
  const admin = new pg.Client({ connectionString: process.env.WALGATE_TEST_ADMIN_URL });
  await admin.connect();
  const walStatus = async () =>
    (await admin.query<{ wal_status: string }>(`SELECT wal_status FROM pg_replication_slots WHERE slot_name = $1`, [slotName])).rows[0]
      ?.wal_status;
  try {
    await admin.query(`ALTER SYSTEM SET max_slot_wal_keep_size = '1MB'`);
    await admin.query('SELECT pg_reload_conf()');
    for (let round = 0; round < 40 && (await walStatus()) !== 'lost'; round++) {
      await writeRound(round);
      await admin.query('SELECT pg_switch_wal()');
      await admin.query('CHECKPOINT');
    }
    expect(await walStatus(), 'the slot lost WAL').to.equal('lost');
  } finally {
    await admin.query(`ALTER SYSTEM RESET max_slot_wal_keep_size`);
    await admin.query('SELECT pg_reload_conf()');
    await admin.end();
  }
}
