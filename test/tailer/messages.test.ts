import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'chai';
import { startPipeline, type Pipeline } from '../delivery/support.js';
import { HttpClient } from '../support/http.js';
import { verifies } from '../support/receiver.js';
import { startTestApi } from '../support/api.js';
import type { ReservedMessage } from '../../src/tailer/messages.js';
import { startTailer, waitForLeader, waitUntilCaughtUp } from './support.js';

// Outbox messages: pg_logical_emit_message(true, prefix, content) in an application's transaction
// reaches the environment's `_messages` subscriptions, at its place among that transaction's row
// changes, only if the transaction commits. Real Postgres, tailer, worker and HTTPS receiver.

const SECRET = 'whsec_' + Buffer.alloc(32, 9).toString('base64');

async function subscribeMessages(p: Pipeline, url: string, extra: Record<string, unknown> = {}) {
  const api = new HttpClient(p.t.url, {
    authorization: `Bearer ${await p.t.managementToken('shop')}`,
    'x-project-id': 'shop',
    environment: 'master',
  });
  const res = await api.post('/api/rest/_webhooks', {
    projectId: 'shop',
    environment: 'master',
    table: '_messages',
    events: ['INSERT'],
    url,
    secret: SECRET,
    ...extra,
  });
  return { res, api };
}

describe('tailer: outbox messages (`_messages`)', function () {
  this.timeout(90_000);
  let p: Pipeline;

  before(async () => {
    p = await startPipeline();
  });
  after(() => p?.close());

  it('delivers a committed transaction’s messages in order with its rows; never a rolled-back one’s, another tenant’s, a non-transactional one or walgate’s own', async () => {
    const rows = await p.subscribe({ url: `${p.receiver.url}/rows`, events: ['INSERT', 'UPDATE'] });
    const { res, api } = await subscribeMessages(p, `${p.receiver.url}/messages`, { filter: { prefix: 'shop_master.order_paid' } });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    const hook = res.body.webhook.id as string;
    const w = p.writer;
    const emit = (prefix: string, content: string, transactional = true) =>
      w.query('SELECT pg_logical_emit_message($1, $2, $3)', [transactional, prefix, content]);

    await w.query('BEGIN');
    await w.query(`INSERT INTO shop_master.orders VALUES (1, 'new', 10)`);
    await emit('shop_master.order_paid', '{"order": 1, "amount": 10.50}');
    await emit('shop_master.order_shipped', '{"order": 1}'); // filtered out by prefix
    await w.query(`UPDATE shop_master.orders SET status = 'paid' WHERE id = 1`);
    await w.query('COMMIT');

    await w.query('BEGIN');
    await w.query(`INSERT INTO shop_master.orders VALUES (2, 'new', 20)`);
    await emit('shop_master.order_paid', '{"order": 2}');
    await w.query('ROLLBACK');

    await emit('shop_master.order_paid', '{"order": "not transactional"}', false);
    await emit('shop_staging.order_paid', '{"order": "another tenant"}');
    await emit('walgate.backfill', '{"watermark": "low"}');
    await emit('order_paid', '{"order": "no schema"}');
    // A table-free outbox: a transaction with a message and no row.
    await emit('shop_master.order_paid', 'plain text, not JSON');
    await waitUntilCaughtUp(p.t.ctx, p.tailer, 20_000);
    await p.receiver.waitFor(4, 20_000);
    await sleep(500); // anything more would be on its way by now

    const got = p.receiver.requests.map((r) => ({ path: r.path, headers: r.headers, body: JSON.parse(r.body), raw: r }));
    expect(got.map((g) => g.path).sort()).to.deep.equal(['/messages', '/messages', '/rows', '/rows']);
    const messages = got.filter((g) => g.path === '/messages').sort((a, b) => (a.body.id < b.body.id ? -1 : 1));
    const changes = got.filter((g) => g.path === '/rows').sort((a, b) => (a.body.id < b.body.id ? -1 : 1));
    for (const m of messages) {
      expect(verifies(SECRET, m.raw), 'signed with the subscription secret').to.equal(true);
      expect(m.body).to.include({ table: '_messages', event: 'INSERT', project_id: 'shop', environment: 'master', old_record: null });
      expect(m.headers['x-service-event']).to.equal('INSERT');
      expect(m.body.data).to.deep.equal(m.body.record);
    }
    expect(messages[0]!.body.record).to.deep.equal({ prefix: 'shop_master.order_paid', content: { order: 1, amount: 10.5 } });
    expect(messages[0]!.raw.body).to.contain('"amount": 10.50'); // the content as sent
    expect(messages[1]!.body.record).to.deep.equal({ prefix: 'shop_master.order_paid', content: 'plain text, not JSON' });

    // In commit order with the rows: the same transaction (commit LSN), between the INSERT and the UPDATE.
    const [insert, update] = changes.map((c) => c.body.id as string);
    const message = messages[0]!.body.id as string;
    expect(changes.map((c) => c.body.event)).to.deep.equal(['INSERT', 'UPDATE']);
    expect(message.slice(0, 21)).to.equal(insert!.slice(0, 21));
    expect(insert! < message && message < update!, `${insert} < ${message} < ${update}`).to.equal(true);
    expect(messages[1]!.body.id > update!).to.equal(true);

    // The subscription is healthy (no table behind it to go missing) and its test event has its shape.
    const view = await api.get(`/api/rest/_webhooks/${hook}`);
    expect(view.status).to.equal(200);
    expect(view.body.webhook.problems).to.deep.equal([]);
    const test = await api.post(`/api/rest/_webhooks/${hook}/test`, {});
    expect(test.status, JSON.stringify(test.body)).to.be.oneOf([200, 201, 202]);
    await p.receiver.waitFor(5, 10_000);
    expect(Object.keys(JSON.parse(p.receiver.requests[4]!.body).record)).to.deep.equal(['prefix', 'content']);
    await api.delete(`/api/rest/_webhooks/${hook}`);
    await p.t.ctx.pool.query('DELETE FROM walgate.webhooks WHERE id = $1', [rows]);
  });

  it('refuses what a `_messages` subscription cannot do: other columns, row ordering, no INSERT', async () => {
    const url = `${p.receiver.url}/refused`;
    for (const [extra, path] of [
      [{ filter: { topic: 'x' } }, 'filter.topic'],
      [{ select: ['prefix', 'payload'] }, 'select.1'],
      [{ ordering: 'row' }, 'ordering'],
      [{ events: ['UPDATE', 'DELETE'] }, 'events'],
    ] as const) {
      const { res } = await subscribeMessages(p, url, extra);
      expect(res.status, JSON.stringify(extra)).to.equal(400);
      expect(res.body.error).to.equal('VALIDATION_ERROR');
      expect(JSON.stringify(res.body)).to.contain(path);
    }
  });

  it('orders by prefix with ordering {by: ["prefix"]}: one prefix\'s messages one at a time in commit order, another prefix not held', async () => {
    const url = `${p.receiver.url}/by-prefix`;
    const refused = await subscribeMessages(p, url, { ordering: { by: ['topic'] } });
    expect(refused.res.status).to.equal(400);
    expect(JSON.stringify(refused.res.body)).to.contain('ordering.by.0');
    const { res, api } = await subscribeMessages(p, url, { ordering: { by: ['prefix'] } });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    expect(res.body.webhook.ordering).to.deep.equal({ by: ['prefix'] });
    // The first "paid" message is refused twice, asking for 2 s each time.
    const attempts = new Map<string, number>();
    const start = p.receiver.requests.length;
    p.receiver.behave = (req) => {
      if (req.path !== '/by-prefix') return { status: 200 };
      const body = JSON.parse(req.body);
      const n = (attempts.get(body.id) ?? 0) + 1;
      attempts.set(body.id, n);
      return body.record.content.n === 1 && n <= 2 ? { status: 503, headers: { 'retry-after': '2' } } : { status: 200 };
    };
    for (const [prefix, n] of [
      ['shop_master.paid', 1],
      ['shop_master.paid', 2],
      ['shop_master.shipped', 3],
      ['shop_master.paid', 4],
    ] as const) {
      await p.writer.query('SELECT pg_logical_emit_message(true, $1, $2)', [prefix, JSON.stringify({ n })]);
    }
    const ok = () =>
      p.receiver.requests
        .slice(start)
        .filter((r) => r.path === '/by-prefix')
        .map((r) => ({ n: JSON.parse(r.body).record.content.n as number, at: r.at }));
    for (let waited = 0; new Set(ok().map((x) => x.n)).size < 4 || ok().length < 6; waited += 50) {
      if (waited > 20_000) throw new Error(`not delivered: ${JSON.stringify(ok())}`);
      await sleep(50);
    }
    const got = ok();
    // "paid": 1 (refused twice, then accepted), then 2, then 4 — nothing of it before 1 got through.
    expect(got.filter((x) => x.n !== 3).map((x) => x.n)).to.deep.equal([1, 1, 1, 2, 4]);
    // "shipped" did not wait for "paid".
    expect(got.find((x) => x.n === 3)!.at).to.be.below(got.filter((x) => x.n === 1).at(-1)!.at);
    p.receiver.behave = () => ({ status: 200 });
    await api.delete(`/api/rest/_webhooks/${res.body.webhook.id}`);
  });

  it('weighs a huge message by its bytes: with a budget smaller than one, one at a time, each whole', async () => {
    const q = await startPipeline({ TAILER_MAX_HELD_BYTES: String(1024 * 1024) });
    try {
      q.receiver.behave = () => ({ status: 200, after: sleep(150) });
      const { res } = await subscribeMessages(q, `${q.receiver.url}/big`);
      expect(res.status, JSON.stringify(res.body)).to.equal(201);
      const big = (i: number) => JSON.stringify({ i, pad: 'x'.repeat(1_500_000) });
      for (let i = 0; i < 4; i++) await q.writer.query(`SELECT pg_logical_emit_message(true, 'shop_master.big', $1)`, [big(i)]);
      const got = await q.receiver.waitFor(4, 60_000);
      const bodies = got.map((r) => JSON.parse(r.body));
      expect(bodies.map((b) => b.record.content.i).sort()).to.deep.equal([0, 1, 2, 3]);
      expect(bodies.every((b) => b.record.content.pad.length === 1_500_000)).to.equal(true);
      // Each 1.5 MB delivery fills the 1 MB budget alone: reading waited until it was settled.
      for (let i = 1; i < got.length; i++) expect(got[i]!.at).to.be.at.least(got[i - 1]!.answeredAt!);
    } finally {
      await q.close();
    }
  });

  it('hands walgate.* messages, transactional or not, to the tailer’s hook with their place; no other prefix', async () => {
    const t = await startTestApi();
    const seen: ReservedMessage[] = [];
    const tailer = startTailer(t.ctx, t.database.url, { onReservedMessage: (m) => void seen.push(m) });
    try {
      await waitForLeader(tailer);
      const db = t.ctx.pool;
      await db.query(`SELECT pg_logical_emit_message(false, 'walgate.backfill', 'early')`);
      await db.query(
        `BEGIN; SELECT pg_logical_emit_message(true, 'app.x', 'a'), pg_logical_emit_message(true, 'walgate.backfill', 'low'); COMMIT;`,
      );
      await db.query(`BEGIN; SELECT pg_logical_emit_message(true, 'walgate.backfill', 'rolled back'); ROLLBACK;`);
      await waitUntilCaughtUp(t.ctx, tailer, 20_000);
      expect(seen.map((m) => [m.message.prefix, m.message.content.toString(), m.message.transactional, m.index])).to.deep.equal([
        ['walgate.backfill', 'early', false, null],
        ['walgate.backfill', 'low', true, 1], // after app.x: numbered with the transaction's changes
      ]);
      expect(seen[0]!.commitLsn).to.equal(null);
      expect(typeof seen[1]!.commitLsn).to.equal('bigint');
      expect(seen[1]!.committedAt).to.be.instanceOf(Date);
    } finally {
      await tailer.stop();
      await t.close();
    }
  });
});
