import { expect } from 'chai';
import { recordGap } from '../../src/tailer/gaps.js';
import { managementClient } from '../support/api.js';
import type { HttpClient } from '../support/http.js';
import { eventually, startPipeline, type Pipeline } from './support.js';

// walgate's own operational events, delivered through the same engine: a subscription on
// `_operations` receives its environment's subscription.disabled, delivery.dead, breaker.opened /
// breaker.closed, gap.recorded and problem.raised / problem.cleared — signed and retried like any
// change, never another tenant's, never about itself.

interface Operation {
  id: string;
  seq: number;
  type: string;
  project_id: string;
  environment: string;
  subscription_id: string | null;
  delivery_id: string | null;
  details: Record<string, any>;
}

describe('operations: walgate’s own events as `_operations` webhooks', function () {
  this.timeout(90_000);
  let p: Pipeline;
  let shop: HttpClient;
  let rival: HttpClient;
  let down = true;

  /** The operations delivered to a path, oldest first (each once, by event id). */
  const operationsAt = (path: string): Operation[] => {
    const seen = new Map<string, Operation>();
    for (const r of p.receiver.requests.filter((q) => q.path === path)) {
      const body = JSON.parse(r.body);
      expect(body.table).to.equal('_operations');
      seen.set(body.id, body.record);
    }
    return [...seen.values()].sort((a, b) => a.seq - b.seq);
  };
  const waitFor = (path: string, type: string, match: (o: Operation) => boolean = () => true) =>
    eventually(
      async () => operationsAt(path).filter((o) => o.type === type && match(o)),
      (found) => found.length > 0,
      20_000,
    );
  const subscribe = (api: HttpClient, projectId: string, body: Record<string, unknown>) =>
    api.post('/api/rest/_webhooks', {
      projectId,
      environment: 'master',
      events: ['INSERT'],
      secret: 'whsec-operations-test-0123456789',
      ...body,
    });

  before(async () => {
    // Any replication lag past 1 byte is a slot.lag, checked every half second (the last test).
    p = await startPipeline(
      {
        WEBHOOK_BREAKER_FAILURES: '2',
        WEBHOOK_BREAKER_COOLDOWN_MS: '1500',
        WEBHOOK_RETRY_DELAYS_MS: '0,50,50',
        OPERATIONS_SLOT_LAG_BYTES: '1',
      },
      {},
      {},
      { reportIntervalMs: 500 },
    );
    await p.t.provision({ projectId: 'rival', name: 'master' });
    await p.writer.query('CREATE TABLE rival_master.orders (id int PRIMARY KEY, status text)');
    shop = await managementClient(p.t, 'shop');
    rival = await managementClient(p.t, 'rival');
    p.receiver.behave = (req) => {
      if (req.path === '/gone') return { status: 410 };
      if (req.path === '/down') return { status: down ? 503 : 200 };
      return { status: 200 };
    };
    for (const [api, project, path] of [
      [shop, 'shop', '/shop-ops'],
      [rival, 'rival', '/rival-ops'],
    ] as const) {
      const r = await subscribe(api, project, { table: '_operations', url: `${p.receiver.url}${path}` });
      expect(r.status, JSON.stringify(r.body)).to.equal(201);
    }
  });
  after(() => p?.close());

  it('a 410 disables a subscription: subscription.disabled reaches the project’s own operations subscription, not another project’s', async () => {
    const gone = await subscribe(shop, 'shop', { table: 'orders', url: `${p.receiver.url}/gone` });
    await p.writer.query(`INSERT INTO shop_master.orders VALUES (1, 'new', 1)`);
    const [op] = await waitFor('/shop-ops', 'subscription.disabled', (o) => o.subscription_id === gone.body.webhook.id);
    expect(op).to.deep.include({ project_id: 'shop', environment: 'master', delivery_id: null });
    expect(op!.details.reason).to.match(/410/);
    // An operator pausing one is reported too, saying so.
    const paused = await subscribe(shop, 'shop', { table: 'orders', url: `${p.receiver.url}/paused` });
    expect((await shop.patch(`/api/rest/_webhooks/${paused.body.webhook.id}`, { active: false })).status).to.equal(200);
    const [byHand] = await waitFor('/shop-ops', 'subscription.disabled', (o) => o.subscription_id === paused.body.webhook.id);
    expect(byHand!.details.reason).to.equal('operator');
    expect(operationsAt('/rival-ops').filter((o) => o.project_id !== 'rival')).to.deep.equal([]);
  });

  it('a dead letter is delivery.dead; its endpoint’s breaker opening and closing are breaker.opened and breaker.closed', async () => {
    const failing = await subscribe(shop, 'shop', { table: 'orders', url: `${p.receiver.url}/down` });
    await p.writer.query(`INSERT INTO shop_master.orders VALUES (2, 'new', 1)`);
    const [opened] = await waitFor('/shop-ops', 'breaker.opened', (o) => o.details.url === `${p.receiver.url}/down`);
    expect(opened!.subscription_id).to.equal(null);
    const [dead] = await waitFor('/shop-ops', 'delivery.dead', (o) => o.subscription_id === failing.body.webhook.id);
    const [row] = await p.delivery(failing.body.webhook.id);
    expect(dead!.delivery_id).to.equal(row!.id);
    expect(dead!.details).to.include({ eventId: row!.event_id, attempts: row!.attempts });
    down = false;
    await p.writer.query(`INSERT INTO shop_master.orders VALUES (3, 'new', 1)`); // the probe, after the cool-down
    await eventually(
      async () => {
        if (operationsAt('/shop-ops').some((o) => o.type === 'breaker.closed')) return true;
        await p.writer.query(`UPDATE shop_master.orders SET status = status WHERE id = 3`);
        return false;
      },
      (closed) => closed,
      20_000,
    );
    expect(operationsAt('/rival-ops').filter((o) => o.type.startsWith('breaker') || o.type === 'delivery.dead')).to.deep.equal([]);
  });

  it('a recorded capture gap is gap.recorded, for its own environment only', async () => {
    const id = await recordGap(p.t.ctx.pool, {
      projectId: 'rival',
      environment: 'master',
      slotName: 'walgate_test',
      reason: 'slot_lost',
      fromLsn: '0/1',
      toLsn: '0/2',
      fromTime: new Date(Date.now() - 60_000),
      toTime: new Date(),
      webhookIds: [],
    });
    const [gap] = await waitFor('/rival-ops', 'gap.recorded');
    expect(gap!.details).to.include({ gapId: id, reason: 'slot_lost' });
    expect(operationsAt('/shop-ops').filter((o) => o.type === 'gap.recorded')).to.deep.equal([]);
  });

  it('a filter column dropped is problem.raised; added back, problem.cleared', async () => {
    const filtered = await subscribe(shop, 'shop', { table: 'orders', url: `${p.receiver.url}/filtered`, filter: { status: 'paid' } });
    const id = filtered.body.webhook.id as string;
    await p.writer.query('ALTER TABLE shop_master.orders DROP COLUMN status');
    expect((await shop.get(`/api/rest/_webhooks/${id}`)).body.webhook.problems.map((x: { code: string }) => x.code)).to.include(
      'FILTER_COLUMN_MISSING',
    );
    const [raised] = await waitFor('/shop-ops', 'problem.raised', (o) => o.subscription_id === id);
    expect(raised!.details.code).to.equal('FILTER_COLUMN_MISSING');
    await p.writer.query('ALTER TABLE shop_master.orders ADD COLUMN status text');
    expect((await shop.get(`/api/rest/_webhooks/${id}`)).body.webhook.problems).to.deep.equal([]);
    await waitFor('/shop-ops', 'problem.cleared', (o) => o.subscription_id === id);
  });

  it('replication lag past OPERATIONS_SLOT_LAG_BYTES is slot.lag, to every environment with an operations subscription', async () => {
    const write = setInterval(
      () => void p.writer.query(`INSERT INTO shop_master.orders SELECT coalesce(max(id), 0) + 1, 'x', 1 FROM shop_master.orders`),
      20,
    );
    try {
      const [shopLag] = await waitFor('/shop-ops', 'slot.lag');
      await waitFor('/rival-ops', 'slot.lag');
      expect(shopLag!.details.thresholdBytes).to.equal(1);
      expect(shopLag!.details.lagBytes).to.be.above(1);
    } finally {
      clearInterval(write);
    }
  });

  it('never about itself: an operations subscription that fails leaves no operations event about it', async () => {
    const before = (await p.t.ctx.pool.query('SELECT count(*)::int AS n FROM walgate.operations')).rows[0].n as number;
    const selfish = await subscribe(shop, 'shop', { table: '_operations', url: `${p.receiver.url}/gone` });
    expect(selfish.status).to.equal(201);
    // An event for it to carry: a subscription paused by hand.
    const other = await subscribe(shop, 'shop', { table: 'orders', url: `${p.receiver.url}/x` });
    await shop.patch(`/api/rest/_webhooks/${other.body.webhook.id}`, { active: false });
    await eventually(
      async () => (await shop.get(`/api/rest/_webhooks/${selfish.body.webhook.id}`)).body.webhook.active,
      (active) => active === false,
      20_000,
    );
    const { rows } = await p.t.ctx.pool.query('SELECT type, subscription_id FROM walgate.operations ORDER BY seq OFFSET $1', [before]);
    expect(rows.filter((r) => r.subscription_id === selfish.body.webhook.id)).to.deep.equal([]);
    // `_operations` takes INSERT only, like the other feeds.
    const r = await subscribe(shop, 'shop', { table: '_operations', events: ['UPDATE'], url: `${p.receiver.url}/y` });
    expect(r.status).to.equal(400);
    expect(r.body.violations[0].path).to.equal('events');
  });
});
