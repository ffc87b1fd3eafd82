import { expect } from 'chai';
import type { DeliveryEngine } from '../../src/delivery/engine.js';
import { replayDeadDeliveries } from '../../src/delivery/sql/history.js';
import { Pruner } from '../../src/retention/pruner.js';
import { HttpClient } from '../support/http.js';
import { eventually, startPipeline, testWorker, type Pipeline } from '../delivery/support.js';
import { startTailer } from '../tailer/support.js';

// Retention of delivery history on the real path (tailer → worker → HTTPS receiver), with windows
// of seconds: delivered history goes after 4 s, dead letters after 10 s, and the pruner passes on
// its own schedule (min(window / 2, 10 min) = 2 s).

const DELIVERED_MS = 4000;
const DEAD_MS = 10_000;

describe('retention: delivered and dead history is removed by age, unfinished deliveries never', function () {
  this.timeout(60_000);
  let p: Pipeline;
  let pruner: Pruner;
  let worker: DeliveryEngine | undefined;
  let api: HttpClient;
  before(async () => {
    p = await startPipeline({
      WEBHOOK_RETENTION_MS: String(DELIVERED_MS),
      WEBHOOK_DEAD_RETENTION_MS: String(DEAD_MS),
      WEBHOOK_RETRY_DELAYS_MS: '0,40,80,120,160',
      WEBHOOK_TIMEOUT_MS: '1500',
      WEBHOOK_BREAKER_FAILURES: '1000',
    });
    for (const table of ['failing', 'expiring', 'paused'])
      await p.writer.query(`CREATE TABLE shop_master.${table} (id int PRIMARY KEY, note text)`);
    api = new HttpClient(p.t.url, {
      authorization: `Bearer ${await p.t.managementToken('shop')}`,
      'x-project-id': 'shop',
      environment: 'master',
    });
    pruner = new Pruner(p.t.ctx, { scopes: ['history'] });
    pruner.start();
  });
  after(async () => {
    await pruner?.stop();
    await worker?.stop(2000);
    await p?.close();
  });

  const shown = async (id: string) => {
    const res = await api.get(`/api/rest/_webhooks/${id}`);
    expect(res.status).to.equal(200);
    return (res.body as { deliveries: Array<{ id: string; status: string }> }).deliveries;
  };
  const count = async (sql: string, ids: string[]) => (await p.t.ctx.pool.query(sql, [ids])).rows[0].n as number;

  it('removes delivered history after WEBHOOK_RETENTION_MS and dead letters after WEBHOOK_DEAD_RETENTION_MS; a dead letter replays inside its window; pending and retrying deliveries of a paused subscription stay', async () => {
    const failing = await p.newReceiver();
    failing.behave = () => ({ status: 500 });
    const alwaysFailing = await p.newReceiver();
    alwaysFailing.behave = () => ({ status: 500 });
    const hanging = await p.newReceiver();
    hanging.behave = () => ({ hang: true });
    const delivered = await p.subscribe();
    const dead = await p.subscribe({ table: 'failing', url: `${failing.url}/hook` });
    const expiring = await p.subscribe({ table: 'expiring', url: `${alwaysFailing.url}/hook` });
    const paused = await p.subscribe({ table: 'paused', url: `${hanging.url}/hook` });

    // A change whose attempt hangs; the worker stops meanwhile, and records the timed-out attempt:
    // the delivery is `retrying`. A second change while no worker runs stays `pending`. Then the
    // subscription is paused, and a new worker starts: it claims neither.
    // (The stream parks the timed-out attempt as `retrying`; the second change is read by a new
    // tailer once the subscription is paused, and parked as `pending`.)
    await p.writer.query(`INSERT INTO shop_master.paused VALUES (1, 'retrying')`);
    await eventually(
      async () => hanging.requests.length,
      (n) => n === 1,
    );
    await eventually(
      () => p.delivery(paused),
      (r) => r.length === 1 && r[0]!.status === 'retrying',
    );
    await p.tailer.stop();
    await p.worker.stop(5000);
    await p.writer.query(`INSERT INTO shop_master.paused VALUES (2, 'pending')`);
    await p.writer.query(`UPDATE walgate.webhooks SET active = false WHERE id = $1`, [paused]);
    worker = await testWorker(p.t.ctx);
    worker.start();
    p.tailer = startTailer(p.t.ctx, p.t.database.url, { sink: worker });
    const unfinished = await eventually(
      () => p.delivery(paused),
      (r) => r.length === 2 && r.some((d) => d.status === 'retrying') && r.some((d) => d.status === 'pending'),
    );

    await p.writer.query(`INSERT INTO shop_master.orders VALUES (1, 'new', 1), (2, 'new', 2)`);
    await p.writer.query(`INSERT INTO shop_master.failing VALUES (1, 'replayed')`);
    await p.writer.query(`INSERT INTO shop_master.expiring VALUES (1, 'expires')`);
    const done = await eventually(
      () => p.delivery(delivered),
      (r) => r.length === 2 && r.every((d) => d.status === 'delivered'),
    );
    expect(await shown(delivered)).to.have.length(2);
    const died = await eventually(
      () => p.delivery(dead),
      (r) => r.length === 1 && r[0]!.status === 'dead',
    );
    const expired = await eventually(
      () => p.delivery(expiring),
      (r) => r.length === 1 && r[0]!.status === 'dead',
    );
    expect(await shown(dead)).to.have.length(1);

    // Delivered history: gone from the API and from every table, attempts and event data included.
    await eventually(
      () => shown(delivered),
      (d) => d.length === 0,
      3 * DELIVERED_MS + 2000,
    );
    const doneIds = done.map((d) => d.id);
    expect(await count('SELECT count(*)::int AS n FROM walgate.deliveries WHERE id = ANY($1)', doneIds)).to.equal(0);
    expect(await count('SELECT count(*)::int AS n FROM walgate.delivery_attempts WHERE delivery_id = ANY($1)', doneIds)).to.equal(0);
    await eventually(
      () =>
        count(
          'SELECT count(*)::int AS n FROM walgate.events WHERE id = ANY($1)',
          done.map((d) => d.event_id),
        ),
      (n) => n === 0,
      3000,
    );

    // Dead letters older than the delivered window but inside theirs: kept, and they replay.
    expect((await shown(dead)).map((d) => d.status)).to.deep.equal(['dead']);
    expect((await shown(expiring)).map((d) => d.status)).to.deep.equal(['dead']);
    failing.behave = () => ({ status: 200 });
    expect(await replayDeadDeliveries(p.t.ctx.pool, { webhookId: dead }, new Date())).to.equal(1);
    await eventually(
      () => p.delivery(dead),
      (r) => r[0]?.status === 'delivered',
    );
    const last = failing.requests[failing.requests.length - 1]!;
    expect(JSON.parse(last.body).record).to.deep.equal({ id: 1, note: 'replayed' }); // its payload was kept
    expect(failing.requests).to.have.length(6); // 5 failed attempts + the replay

    // The other dead letter goes after WEBHOOK_DEAD_RETENTION_MS, with its attempts and event data.
    await eventually(
      () => shown(expiring),
      (d) => d.length === 0,
      DEAD_MS + 3000,
    );
    expect(await count('SELECT count(*)::int AS n FROM walgate.delivery_attempts WHERE delivery_id = ANY($1)', [expired[0]!.id])).to.equal(
      0,
    );
    await eventually(
      () => count('SELECT count(*)::int AS n FROM walgate.events WHERE id = ANY($1)', [expired[0]!.event_id]),
      (n) => n === 0,
      3000,
    );

    // Replayed and delivered: history now, removed WEBHOOK_RETENTION_MS after its delivery.
    await eventually(
      () => shown(dead),
      (d) => d.length === 0,
      3 * DELIVERED_MS + 2000,
    );
    expect(
      await count(
        'SELECT count(*)::int AS n FROM walgate.delivery_attempts WHERE delivery_id = ANY($1)',
        died.map((d) => d.id),
      ),
    ).to.equal(0);

    // The paused subscription's deliveries are older than every window and all still there, with their event data.
    const kept = await p.delivery(paused);
    expect(kept.map((d) => d.id).sort()).to.deep.equal(unfinished.map((d) => d.id).sort());
    expect(kept.map((d) => d.status).sort()).to.deep.equal(['pending', 'retrying']);
    expect(
      await count(
        'SELECT count(*)::int AS n FROM walgate.events WHERE id = ANY($1)',
        kept.map((d) => d.event_id),
      ),
    ).to.equal(2);
    expect(await shown(paused)).to.have.length(2);

    const metrics = await p.t.ctx.metrics.text();
    expect(metrics).to.match(/walgate_retention_removed_rows_total\{table="deliveries",status="delivered"\} [1-9]/);
    expect(metrics).to.match(/walgate_retention_removed_rows_total\{table="delivery_attempts"\} [1-9]/);
    expect(metrics).to.match(/walgate_retention_removed_rows_total\{table="events"\} [1-9]/);
    expect(metrics).to.match(/walgate_retention_oldest_row_age_seconds\{table="events"\} \d/);
    expect(p.t.logs.text).to.contain('"msg":"retention pass"');
  });
});
