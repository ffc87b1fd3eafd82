import { expect } from 'chai';
import { Pruner } from '../../src/retention/pruner.js';
import { startTestApi, type TestApi } from '../support/api.js';
import { HttpClient } from '../support/http.js';
import { insertSubscription } from '../support/subscriptions.js';

// A paused subscription's backlog is bounded by age (WEBHOOK_PAUSED_BACKLOG_MS): what falls out is
// dead — visible, counted, replayable — instead of waiting without end.
describe('retention: a paused subscription’s backlog is bounded', function () {
  this.timeout(60_000);
  let t: TestApi;
  let api: HttpClient;
  before(async () => {
    t = await startTestApi({ env: { WEBHOOK_PAUSED_BACKLOG_MS: '3600000' } });
    await t.provision({ projectId: 'shop', name: 'master' });
    await t.ctx.pool.query('CREATE TABLE shop_master.orders (id int PRIMARY KEY)');
    api = new HttpClient(t.url, {
      authorization: `Bearer ${await t.managementToken('shop')}`,
      'x-project-id': 'shop',
      environment: 'master',
    });
  });
  after(() => t?.close());

  it('deliveries older than the bound become dead letters, the younger ones and an active subscription’s wait; health shows the backlog; a replay brings them back', async () => {
    const sub = (active: boolean) =>
      insertSubscription(t.ctx, {
        projectId: 'shop',
        environment: 'master',
        schema: 'shop_master',
        table: 'orders',
        url: 'https://93.184.216.34/hook',
        active,
      });
    const paused = await sub(false);
    const active = await sub(true);
    const now = t.ctx.clock().getTime();
    for (const [wh, n, ageMs] of [
      [paused, 30, 2 * 3_600_000],
      [paused, 5, 60_000],
      [active, 10, 2 * 3_600_000],
    ] as const) {
      await t.ctx.pool.query(
        `INSERT INTO walgate.deliveries (id, webhook_id, event_id, event_type, status, attempts, next_attempt_at, created_at)
         SELECT 'del_' || $1 || '_' || $3 || '_' || g, $1, 'evt_' || g, 'INSERT', CASE WHEN g % 2 = 0 THEN 'pending' ELSE 'retrying' END, g % 2,
                $4, $4 FROM generate_series(1, $2) g`,
        [wh, n, ageMs, new Date(now - ageMs)],
      );
    }
    const health = async (id: string) => (await api.get(`/api/rest/_webhooks/${id}`)).body.health;
    expect((await health(paused)).backlog).to.equal(35);
    await new Pruner(t.ctx, { scopes: ['history'] }).runPass();
    const { rows } = await t.ctx.pool.query(
      `SELECT webhook_id, status, last_error, count(*)::int AS n FROM walgate.deliveries GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`,
    );
    const byKey = Object.fromEntries(rows.map((r) => [`${r.webhook_id === paused ? 'paused' : 'active'} ${r.status}`, r]));
    expect(byKey['paused dead']).to.include({ n: 30, last_error: 'subscription paused longer than its backlog is kept' });
    expect((byKey['paused pending']?.n ?? 0) + (byKey['paused retrying']?.n ?? 0)).to.equal(5);
    expect(byKey['active dead']).to.equal(undefined);
    expect((await health(paused)).backlog).to.equal(5);
    // Listed as dead letters, and replayable.
    const dead = await api.get(`/api/rest/_webhooks/${paused}/deliveries?status=dead&limit=100`);
    expect(dead.body.deliveries).to.have.length(30);
    const replay = await api.post(`/api/rest/_webhooks/${paused}/replay`, {});
    expect(replay.body.replay).to.include({ state: 'done', count: 30, replayed: 30 });
    expect((await health(paused)).backlog).to.equal(35);
  });
});
