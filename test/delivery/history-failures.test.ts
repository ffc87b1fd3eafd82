import { expect } from 'chai';
import { deliveryId } from '../../src/tailer/events.js';
import { managementClient } from '../support/api.js';
import type { HttpClient } from '../support/http.js';
import type { ReceivedRequest } from '../support/receiver.js';
import { eventually, startPipeline, type Pipeline } from './support.js';

// `history: "failures"` (docs/webhooks.md: History) on the whole path — a pg client writes, the
// tailer streams, an HTTPS receiver answers: a change delivered at its first attempt leaves no row
// in walgate.deliveries, only its count in the per-minute rollup that health reads; whatever goes
// through the retry queue keeps its row, attempts and payload, and can be retried and replayed;
// `"full"` is as before. Everything is read where a user reads it (the API) and counted in the table.

describe('delivery: history "failures" keeps failures and counts successes', function () {
  this.timeout(60_000);
  let p: Pipeline;
  let api: HttpClient;
  let nextId = 1;
  /** Per receiver path: what it answers (200 unless told). */
  const answers = new Map<string, (r: ReceivedRequest) => number>();

  before(async () => {
    // A high breaker threshold: these tests fail deliveries on purpose and must not wait on a cooldown.
    p = await startPipeline({ WEBHOOK_BREAKER_FAILURES: '1000' });
    p.receiver.behave = (r) => ({ status: answers.get(r.path)?.(r) ?? 200 });
    api = await managementClient(p.t, 'shop');
  });
  after(async () => {
    await p?.close();
  });

  /** Inserts `n` rows in transactions of 20 (one statement each). */
  async function insertRows(n: number): Promise<void> {
    for (let left = n; left > 0; left -= 20) {
      const k = Math.min(20, left);
      await p.writer.query(
        `INSERT INTO shop_master.orders (id, status, amount) SELECT g, 'paid', 1 FROM generate_series($1::int, $2::int) g`,
        [nextId, nextId + k - 1],
      );
      nextId += k;
    }
  }

  const rowsOf = async (webhookId: string, where = 'true') =>
    (
      await p.t.ctx.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM walgate.deliveries WHERE webhook_id = $1 AND ${where}`, [
        webhookId,
      ])
    ).rows[0]!.n;
  /** The rollup's delivered count of the last hour, as `GET …/minutes` sums it. */
  const minutesDelivered = async (webhookId: string) => {
    const res = await api.get(`/api/rest/_webhooks/${webhookId}/minutes`);
    expect(res.status).to.equal(200);
    return (res.body.minutes as Array<{ delivered: number }>).reduce((a, m) => a + m.delivered, 0);
  };
  const received = (path: string) => new Set(p.receiver.requests.filter((r) => r.path === path).map((r) => r.headers['webhook-id']));

  async function create(path: string, extra: Record<string, unknown> = {}): Promise<string> {
    const res = await api.post('/api/rest/_webhooks', {
      projectId: 'shop',
      environment: 'master',
      table: 'orders',
      events: ['INSERT'],
      url: `${p.receiver.url}${path}`,
      secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
      ...extra,
    });
    expect(res.status, res.text).to.equal(201);
    return res.body.webhook.id as string;
  }

  it('N changes delivered at their first attempt: no history row (counted), health and the rollup count N; "full" beside it as before', async () => {
    const failures = await create('/failures', { history: 'failures' });
    const full = await create('/full');
    const view = await api.get(`/api/rest/_webhooks/${failures}`);
    expect(view.body.webhook.history).to.equal('failures');
    expect((await api.get(`/api/rest/_webhooks/${full}`)).body.webhook.history, 'the default').to.equal('full');

    const N = 60;
    await insertRows(N);
    // Counted in the same statement that would have written the rows: once it shows N, nothing more is coming.
    await eventually(
      () => minutesDelivered(failures),
      (n) => n >= N,
      20_000,
    );
    await eventually(
      () => minutesDelivered(full),
      (n) => n >= N,
      20_000,
    );
    expect(received('/failures').size, 'every change reached the receiver').to.equal(N);
    expect(received('/full').size).to.equal(N);

    expect(await rowsOf(failures), 'history rows of the "failures" subscription').to.equal(0);
    expect(await rowsOf(full), 'history rows of the "full" one').to.equal(N);
    expect(await minutesDelivered(failures)).to.equal(N);
    expect(await minutesDelivered(full)).to.equal(N);

    const health = await api.get(`/api/rest/_webhooks/${failures}/health`);
    expect(health.body.windows[0]).to.include({ window: '24h', delivered: N, attemptsSucceeded: N, attemptsFailed: 0, successRate: 1 });
    const summary = await api.get(`/api/rest/_webhooks/${failures}`);
    expect(summary.body.health.lastSuccessAt, 'lastSuccessAt from the rollup').to.be.a('string');
    expect(summary.body.deliveries).to.deep.equal([]);

    // The log says what it cannot show; the "full" one says nothing of the kind.
    const log = await api.get(`/api/rest/_webhooks/${failures}/deliveries`);
    expect(log.body.deliveries).to.deep.equal([]);
    expect(log.body.history).to.equal('failures');
    expect(log.body.notListed).to.match(/delivered at their first attempt are not listed/);
    const fullLog = await api.get(`/api/rest/_webhooks/${full}/deliveries?limit=100`);
    expect(fullLog.body).to.include({ history: 'full', notListed: null });
    expect(fullLog.body.deliveries).to.have.length(N);
    expect(fullLog.body.deliveries.every((d: { status: string }) => d.status === 'delivered')).to.equal(true);

    // One of the delivered changes, asked for by id: not found, and the answer says why.
    const eventId = [...received('/failures')][0]!;
    const one = await api.get(`/api/rest/_webhooks/${failures}/deliveries/${deliveryId(failures, eventId)}`);
    expect(one.status).to.equal(404);
    expect(one.body).to.include({ error: 'DELIVERY_NOT_FOUND' });
    expect(one.body.message).to.match(/"failures"/);
  });

  it('a failing receiver: retries and dead letters are kept with their payloads, retried and replayed; successes after a retry keep their row', async () => {
    const id = await create('/flaky', { history: 'failures' });
    answers.set('/flaky', () => 500);
    await insertRows(3);
    await eventually(
      () => rowsOf(id, `status = 'dead'`),
      (n) => n === 3,
      20_000,
    );
    const dead = await api.get(`/api/rest/_webhooks/${id}/deliveries?status=dead`);
    expect(dead.body.deliveries).to.have.length(3);
    for (const d of dead.body.deliveries as Array<{ id: string; eventId: string }>) {
      const detail = await api.get(`/api/rest/_webhooks/${id}/deliveries/${d.id}`);
      expect(detail.body.delivery.attemptLog.map((a: { httpStatus: number }) => a.httpStatus)).to.deep.equal([500, 500, 500, 500, 500]);
      expect(detail.body.delivery.payload, 'the body as sent, kept').to.include({ id: d.eventId, table: 'orders', event: 'INSERT' });
    }

    // The receiver is back: one retried by hand, the others replayed. Each keeps its row, delivered.
    answers.delete('/flaky');
    const [first, ...rest] = dead.body.deliveries as Array<{ id: string; eventId: string }>;
    const retried = await api.post(`/api/rest/_webhooks/${id}/deliveries/${first!.id}/retry`);
    expect(retried.status, retried.text).to.equal(202);
    const replayed = await api.post(`/api/rest/_webhooks/${id}/replay`, {});
    expect(replayed.status, replayed.text).to.equal(202);
    expect(replayed.body.replayed).to.equal(2);
    await eventually(
      () => rowsOf(id, `status = 'delivered'`),
      (n) => n === 3,
      20_000,
    );
    const okAnswers = p.receiver.requests.filter((r) => r.path === '/flaky').slice(-3);
    expect(new Set(okAnswers.map((r) => r.headers['webhook-id']))).to.deep.equal(new Set([first!.eventId, ...rest.map((d) => d.eventId)]));
    const after = await api.get(`/api/rest/_webhooks/${id}/deliveries/${first!.id}`);
    expect(after.body.delivery).to.include({ status: 'delivered', attempts: 6 });
    expect(after.body.delivery.payload).to.include({ id: first!.eventId });

    // A change whose first attempt fails and whose retry succeeds keeps its row and both attempts.
    const tried = new Set<string>();
    answers.set('/flaky', (r) => (tried.has(r.headers['webhook-id']!) ? 200 : (tried.add(r.headers['webhook-id']!), 503)));
    await insertRows(2);
    await eventually(
      () => rowsOf(id, `status = 'delivered' AND attempts = 2`),
      (n) => n === 2,
      20_000,
    );
    expect(await rowsOf(id), 'three dead letters delivered since, and two retried successes').to.equal(5);
    // The rollup counts what the retry queue delivered too.
    await eventually(
      () => minutesDelivered(id),
      (n) => n === 5,
      10_000,
    );
  });

  it('PATCH switches the mode from the next changes on; the view and the list say which', async () => {
    const id = await create('/switch');
    answers.delete('/switch');
    await insertRows(5);
    await eventually(
      () => rowsOf(id),
      (n) => n === 5,
      20_000,
    );

    const patched = await api.patch(`/api/rest/_webhooks/${id}`, { history: 'failures' });
    expect(patched.status, patched.text).to.equal(200);
    expect(patched.body.webhook.history).to.equal('failures');
    const list = await api.get('/api/rest/_webhooks?limit=100');
    expect(list.body.webhooks.find((w: { id: string }) => w.id === id).history).to.equal('failures');
    await insertRows(7);
    await eventually(
      () => minutesDelivered(id),
      (n) => n === 12,
      20_000,
    );
    expect(await rowsOf(id), 'only the rows from before the switch').to.equal(5);

    const back = await api.patch(`/api/rest/_webhooks/${id}`, { history: 'full' });
    expect(back.body.webhook.history).to.equal('full');
    await insertRows(4);
    await eventually(
      () => rowsOf(id),
      (n) => n === 9,
      20_000,
    );
  });

  it('an unknown history is a 400 naming the field, on create and on PATCH; nothing changes', async () => {
    const id = await create('/valid');
    for (const bad of ['none', 'FULL', '', null, 1, true, ['full']]) {
      const created = await api.post('/api/rest/_webhooks', {
        projectId: 'shop',
        environment: 'master',
        table: 'orders',
        events: ['INSERT'],
        url: `${p.receiver.url}/valid`,
        secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
        history: bad,
      });
      expect(created.status, `create with history ${JSON.stringify(bad)}`).to.equal(400);
      expect(created.body.error).to.equal('VALIDATION_ERROR');
      expect(created.body.violations.map((v: { path: string }) => v.path)).to.deep.equal(['history']);
      const patched = await api.patch(`/api/rest/_webhooks/${id}`, { history: bad });
      expect(patched.status, `PATCH with history ${JSON.stringify(bad)}`).to.equal(400);
      expect(patched.body.violations.map((v: { path: string }) => v.path)).to.deep.equal(['history']);
      expect(patched.body.violations[0].message).to.equal('must be "full" or "failures"');
    }
    expect((await api.get(`/api/rest/_webhooks/${id}`)).body.webhook.history).to.equal('full');
    const { rows } = await p.t.ctx.pool.query(`SELECT count(*)::int AS n FROM walgate.webhooks WHERE url LIKE '%/valid'`);
    expect(rows[0].n).to.equal(1);
  });
});
