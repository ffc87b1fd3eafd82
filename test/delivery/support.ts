import pg from 'pg';
import { systemClock } from '../../src/core/clock.js';
import type { Context, ContextOverrides } from '../../src/core/context.js';
import { pgCode, PgCode } from '../../src/core/db/pool.js';
import { DeliveryEngine, type DeliveryEngineOptions } from '../../src/delivery/engine.js';
import type { WalTailer, WalTailerOptions } from '../../src/tailer/tailer.js';
import { startTestApi, type TestApi } from '../support/api.js';
import { TestReceiver } from '../support/receiver.js';
import { insertSubscription, type TestSubscription } from '../support/subscriptions.js';
import { testCertificates } from '../support/tls.js';
import { startTailer, waitForLeader } from '../tailer/support.js';
import { disableWebhook } from '../../src/webhooks/store.js';
import { registerTailerGauges, startTailerOps } from '../../src/ops/tailer-ops.js';
import { closeServer } from '../../src/http/server.js';
import { HttpClient } from '../support/http.js';

export interface Pipeline {
  t: TestApi;
  writer: pg.Client;
  tailer: WalTailer;
  worker: DeliveryEngine;
  receiver: TestReceiver;
  subscribe(extra?: Partial<TestSubscription>): Promise<string>;
  /** A fresh HTTPS receiver (started; stopped with the pipeline). */
  newReceiver(): Promise<TestReceiver>;
  delivery(webhookId: string): Promise<Array<Record<string, any>>>;
  /**
   * Deletes every subscription (their deliveries go with them) between tests. The engine may be
   * writing deliveries meanwhile: a deadlock Postgres breaks is tried again, as the API does.
   */
  removeSubscriptions(): Promise<void>;
  close(): Promise<void>;
}

/** A delivery worker as the daemon builds it, polling often and trusting the test CA. */
export async function testWorker(ctx: Context, options: Partial<DeliveryEngineOptions> = {}): Promise<DeliveryEngine> {
  return new DeliveryEngine(ctx, {
    disableSubscription: (id, reason, at) => disableWebhook(ctx.pool, id, reason, at),
    pollMs: 25,
    tls: { ca: (await testCertificates()).ca },
    ...options,
  });
}

/**
 * The whole path on real components: a plain pg client writes, the tailer reads the WAL, the
 * worker POSTs over HTTPS to a receiver with a certificate from the test CA.
 */
export async function startPipeline(
  env: Record<string, string> = {},
  workerOptions: Partial<DeliveryEngineOptions> = {},
  overrides: ContextOverrides = {},
  tailerOptions: Partial<WalTailerOptions> = {},
): Promise<Pipeline> {
  const t = await startTestApi({
    env: { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', WEBHOOK_RETRY_DELAYS_MS: '0,40,80,120,160', WEBHOOK_TIMEOUT_MS: '1000', ...env },
    overrides: { clock: systemClock, ...overrides },
  });
  await t.provision({ projectId: 'shop', name: 'master' });
  const writer = new pg.Client({ connectionString: t.database.url });
  await writer.connect();
  await writer.query('CREATE TABLE shop_master.orders (id int PRIMARY KEY, status text, amount numeric(12,2))');
  const receivers: TestReceiver[] = [];
  const newReceiver = async () => {
    const r = new TestReceiver();
    await r.start();
    receivers.push(r);
    return r;
  };
  const receiver = await newReceiver();
  const worker = await testWorker(t.ctx, workerOptions);
  worker.start();
  const tailer = startTailer(t.ctx, t.database.url, { sink: worker, ...tailerOptions });
  await waitForLeader(tailer);
  return {
    t,
    writer,
    tailer,
    worker,
    receiver,
    newReceiver,
    subscribe: (extra = {}) =>
      insertSubscription(t.ctx, {
        projectId: 'shop',
        environment: 'master',
        schema: 'shop_master',
        table: 'orders',
        url: `${receiver.url}/hook`,
        ...extra,
      }),
    async delivery(webhookId) {
      const { rows } = await t.ctx.pool.query(
        `SELECT d.*, (SELECT json_agg(a ORDER BY a.id) FROM walgate.delivery_attempts a WHERE a.delivery_id = d.id) AS attempt_log
           FROM walgate.deliveries d WHERE webhook_id = $1 ORDER BY event_id`,
        [webhookId],
      );
      return rows;
    },
    async removeSubscriptions() {
      for (let attempt = 1; ; attempt++) {
        try {
          await t.ctx.pool.query('DELETE FROM walgate.webhooks');
          return;
        } catch (err) {
          if (pgCode(err) !== PgCode.deadlockDetected || attempt >= 5) throw err;
        }
      }
    },
    async close() {
      await tailer.stop();
      await worker.stop(2000);
      await writer.end();
      for (const r of receivers) await r.stop();
      await t.close();
    },
  };
}

/** Polls a condition until it holds or the time runs out. */
export async function eventually<T>(fn: () => Promise<T>, ok: (v: T) => boolean, timeoutMs = 10_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (ok(v)) return v;
    if (Date.now() > until) throw new Error(`condition not met in ${timeoutMs} ms: ${JSON.stringify(v).slice(0, 400)}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** The tailer's own listener (/metrics with its gauges, /healthz, /readyz) for a pipeline. */
export async function startPipelineOps(p: Pipeline): Promise<{ ops: HttpClient; close(): Promise<void> }> {
  registerTailerGauges(p.t.ctx, p.tailer, p.worker);
  const started = await startTailerOps(p.t.ctx, p.tailer, 0, '127.0.0.1');
  return { ops: new HttpClient(started.url), close: () => closeServer(started.server, 1000) };
}
