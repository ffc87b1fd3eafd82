// No delivery worker runs in this file: the public address below is only validated, never contacted.
import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'chai';
import pg from 'pg';
import type { WalTailer } from '../../src/tailer/tailer.js';
import { startTestApi, type TestApi } from '../support/api.js';
import { HttpClient } from '../support/http.js';
import { insertSubscription } from '../support/subscriptions.js';
import { deliveries, startTailer, waitForDeliveries } from '../tailer/support.js';

// Races the refresh, signup and lockout tables of test/auth/security.test.ts do not cover.
describe('reliability: races', function () {
  this.timeout(60_000);
  let t: TestApi;
  let writer: pg.Client;
  before(async () => {
    t = await startTestApi();
    await t.provision({ projectId: 'shop', name: 'master' });
    writer = new pg.Client({ connectionString: t.database.url });
    await writer.connect();
    await writer.query('CREATE TABLE shop_master.orders (id int PRIMARY KEY, status text)');
  });
  after(async () => {
    await writer?.end();
    await t?.close();
  });

  it('concurrent PATCHes of one subscription: all succeed, and the last state is one of them whole', async () => {
    const api = new HttpClient(t.url, {
      authorization: `Bearer ${await t.managementToken('shop')}`,
      'x-project-id': 'shop',
      environment: 'master',
    });
    const created = await api.post('/api/rest/_webhooks', {
      projectId: 'shop',
      environment: 'master',
      table: 'orders',
      events: ['INSERT'],
      url: 'https://93.184.216.34/h/0',
      secret: 'whsec-super-secret-value-0001',
    });
    expect(created.status).to.equal(201);
    const id = created.body.webhook.id as string;
    // Each request changes url, events and active together: a torn write would mix them.
    const states = Array.from({ length: 12 }, (_, i) => ({
      url: `https://93.184.216.34/h/${i + 1}`,
      events: i % 2 ? ['INSERT', 'UPDATE'] : ['DELETE'],
      active: i % 3 !== 0,
    }));
    const answers = await Promise.all(states.map((s) => api.patch(`/api/rest/_webhooks/${id}`, s)));
    expect(answers.map((a) => a.status)).to.deep.equal(states.map(() => 200));
    const final = (await api.get(`/api/rest/_webhooks/${id}`)).body.webhook;
    const match = states.find((s) => s.url === final.url);
    expect(match, final.url).to.not.equal(undefined);
    expect({ url: final.url, events: final.events, active: final.active }).to.deep.equal(match);
  });

  it('concurrent PATCHes of one subscription naming different fields: every change is kept', async () => {
    // A PATCH changes only what it names. Fields it does not name must be taken from the row as it
    // is when the PATCH commits, not as it was read before a concurrent PATCH committed.
    await writer.query('CREATE TABLE IF NOT EXISTS shop_master.archive (id int PRIMARY KEY, status text)');
    const api = new HttpClient(t.url, {
      authorization: `Bearer ${await t.managementToken('shop')}`,
      'x-project-id': 'shop',
      environment: 'master',
    });
    const lost: string[] = [];
    for (let round = 0; round < 10; round++) {
      const created = await api.post('/api/rest/_webhooks', {
        projectId: 'shop',
        environment: 'master',
        table: 'orders',
        events: ['INSERT'],
        url: 'https://93.184.216.34/h',
        secret: 'whsec-super-secret-value-0001',
        filter: { status: 'old' },
      });
      expect(created.status).to.equal(201);
      const id = created.body.webhook.id as string;
      const answers = await Promise.all([
        api.patch(`/api/rest/_webhooks/${id}`, { table: 'archive' }),
        api.patch(`/api/rest/_webhooks/${id}`, { active: false }),
        api.patch(`/api/rest/_webhooks/${id}`, { filter: { status: 'new' }, events: ['INSERT', 'DELETE'] }),
      ]);
      expect(
        answers.map((a) => a.status),
        JSON.stringify(answers.map((a) => a.body)),
      ).to.deep.equal([200, 200, 200]);
      const w = (await api.get(`/api/rest/_webhooks/${id}`)).body.webhook;
      const got = { table: w.table, active: w.active, filter: w.filter, events: w.events };
      if (
        JSON.stringify(got) !== JSON.stringify({ table: 'archive', active: false, filter: { status: 'new' }, events: ['INSERT', 'DELETE'] })
      ) {
        lost.push(`round ${round}: ${JSON.stringify(got)}`);
      }
      expect((await api.delete(`/api/rest/_webhooks/${id}`)).status).to.equal(204);
    }
    expect(lost, 'a PATCH wrote back fields it did not name').to.deep.equal([]);
    // And the publication followed the table: archive left it with its last subscription.
    const { rows } = await t.ctx.pool.query(
      `SELECT tablename FROM pg_publication_tables WHERE pubname = 'walgate' AND schemaname = 'shop_master' AND tablename = 'archive'`,
    );
    expect(rows).to.deep.equal([]);
  });

  it('two tailers started at once: one leads, one stands by, every change arrives once, and the standby takes over', async () => {
    const wh = await insertSubscription(t.ctx, { projectId: 'shop', environment: 'master', schema: 'shop_master', table: 'orders' });
    const pair: WalTailer[] = [startTailer(t.ctx, t.database.url), startTailer(t.ctx, t.database.url)];
    try {
      const until = Date.now() + 10_000;
      while (Date.now() < until && !pair.some((x) => x.status().role === 'leader')) await sleep(50);
      await sleep(300);
      expect(pair.map((x) => x.status().role).sort()).to.deep.equal(['leader', 'standby']);
      await writer.query(`INSERT INTO shop_master.orders SELECT g, 'a' FROM generate_series(1, 300) g`);
      await waitForDeliveries(t.ctx, 300, wh);
      const leader = pair.find((x) => x.status().role === 'leader')!;
      await leader.stop();
      await writer.query(`INSERT INTO shop_master.orders SELECT g, 'b' FROM generate_series(301, 600) g`);
      const found = await waitForDeliveries(t.ctx, 600, wh, 20_000);
      expect(new Set(found.map((d) => d.eventId)).size).to.equal(600);
      expect((await deliveries(t.ctx, wh)).length, 'no duplicates written').to.equal(600);
      expect(pair.find((x) => x !== leader)!.status().role).to.equal('leader');
    } finally {
      await Promise.all(pair.map((x) => x.stop()));
    }
  });
});
