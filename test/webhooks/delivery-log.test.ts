import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { eventually, startPipeline, type Pipeline } from '../delivery/support.js';
import { HttpClient } from '../support/http.js';
import { verifies } from '../support/receiver.js';
import { hexSignature } from '../../src/delivery/signing.js';

// Long enough for a change to be captured and sent inside it on a busy machine.
const GRACE_MS = 10_000;

// The delivery log API and secret rotation on the whole path: a plain pg client writes, the
// tailer and the worker deliver over HTTPS to a real receiver, the API shows what happened.

const whsec = () => `whsec_${randomBytes(32).toString('base64')}`;

describe('delivery log API and secret rotation', function () {
  this.timeout(60_000);
  let p: Pipeline;
  let api: HttpClient;
  let webhookId: string;
  let nextId = 1;
  const firstSecret = whsec();
  const base = () => `/api/rest/_webhooks/${webhookId}`;
  const insertRow = () => p.writer.query('INSERT INTO shop_master.orders (id, status, amount) VALUES ($1, $2, 9.99)', [nextId++, 'paid']);
  /** Inserts row `id` and waits for its first request. */
  const sentRow = async (id: number) => {
    await insertRow();
    const first = () => p.receiver.requests.find((r) => JSON.parse(r.body).record?.id === id);
    await eventually(
      async () => first(),
      (r) => r !== undefined,
      10_000,
    );
    return first()!;
  };

  before(async () => {
    p = await startPipeline({ WEBHOOK_SECRET_GRACE_MS: String(GRACE_MS), WEBHOOK_BREAKER_FAILURES: '100' });
    api = new HttpClient(p.t.url, {
      authorization: `Bearer ${await p.t.managementToken('shop')}`,
      'x-project-id': 'shop',
      environment: 'master',
    });
    const res = await api.post('/api/rest/_webhooks', {
      projectId: 'shop',
      environment: 'master',
      table: 'orders',
      events: ['INSERT'],
      url: `${p.receiver.url}/hook`,
      secret: firstSecret,
    });
    expect(res.status, res.text).to.equal(201);
    webhookId = res.body.webhook.id;
  });
  after(() => p?.close());

  it("lists the environment's tables and columns", async () => {
    const res = await api.get('/api/rest/_webhooks/_tables');
    expect(res.status).to.equal(200);
    expect(res.body.tables).to.deep.equal([
      {
        name: 'orders',
        columns: [
          { name: 'id', type: 'integer' },
          { name: 'status', type: 'text' },
          { name: 'amount', type: 'numeric(12,2)' },
        ],
      },
    ]);
  });

  it('a delivered delivery: listed, with its attempt, the answer, the payload and request headers kept; retried with the same event id', async () => {
    p.receiver.behave = () => ({ status: 200, body: `thanks ${'x'.repeat(2000)}` });
    await insertRow();
    const list = await eventually(
      () => api.get(`${base()}/deliveries`),
      (r) => r.body.deliveries?.[0]?.status === 'delivered',
    );
    expect(list.status).to.equal(200);
    expect(list.body.nextCursor).to.equal(null);
    const d = list.body.deliveries[0];
    const detail = await api.get(`${base()}/deliveries/${d.id}`);
    expect(detail.status).to.equal(200);
    const got = detail.body.delivery;
    expect(got).to.include({ id: d.id, status: 'delivered', httpStatus: 200, attempts: 1 });
    expect(got.attemptLog).to.have.length(1);
    expect(got.attemptLog[0]).to.include({ attempt: 1, httpStatus: 200, error: null });
    expect(got.attemptLog[0].responseBody).to.equal(`thanks ${'x'.repeat(1024 - 7)}`); // the first KiB
    expect(got.attemptLog[0].durationMs).to.be.a('number');
    // Delivered at its first attempt, its change is not stored, but its one write (this history
    // row) keeps what was sent: the body exactly, the headers without the signatures.
    const sent = p.receiver.requests[p.receiver.requests.length - 1]!;
    expect(got.payload).to.deep.equal(JSON.parse(sent.body));
    expect(got.requestHeaders).to.deep.equal({
      'content-type': 'application/json',
      'user-agent': sent.headers['user-agent'],
      'x-service-event': 'INSERT',
      'x-service-delivery': got.eventId,
      'webhook-id': got.eventId,
      'webhook-timestamp': sent.headers['webhook-timestamp'],
    });
    expect(got.responseHeaders).to.include({ 'content-type': 'text/plain', 'content-length': '2007' });
    const { rows } = await p.t.ctx.pool.query('SELECT count(*)::int AS n FROM walgate.events WHERE id = $1', [got.eventId]);
    expect(rows[0].n, 'no events row for a first-try delivery').to.equal(0);
    // …so it can be sent again: the same event id and body.
    const before = p.receiver.requests.length;
    const retry = await api.post(`${base()}/deliveries/${d.id}/retry`, {});
    expect(retry.status, retry.text).to.equal(202);
    const [again] = (await p.receiver.waitFor(before + 1)).slice(before);
    expect(again!.headers['webhook-id']).to.equal(got.eventId);
    expect(again!.body).to.equal(sent.body);
    expect(verifies(firstSecret, again!)).to.equal(true);
    const retried = await eventually(
      () => api.get(`${base()}/deliveries/${d.id}`),
      (r) => r.body.delivery.status === 'delivered' && r.body.delivery.attemptLog.length === 2,
    );
    expect(retried.body.delivery.attemptLog.map((a: any) => [a.attempt, a.httpStatus])).to.deep.equal([
      [1, 200],
      [2, 200],
    ]);

    const health = (await api.get(base())).body.health;
    expect(health).to.deep.include({
      disabledReason: null,
      disabledAt: null,
      failuresLastHour: 0,
      lastSuccessAt: retried.body.delivery.deliveredAt,
    });
    expect(health.breaker).to.deep.equal({ state: 'closed', openUntil: null, consecutiveFailures: 0 });
  });

  it('a failing receiver: attempts with status, error and answer; dead; retry one; health and minutes count the failures', async () => {
    p.receiver.behave = () => ({ status: 503, body: 'down for maintenance' });
    await insertRow();
    const dead = await eventually(
      () => api.get(`${base()}/deliveries?status=dead`),
      (r) => r.body.deliveries?.length === 1,
    );
    const id = dead.body.deliveries[0].id;
    const detail = (await api.get(`${base()}/deliveries/${id}`)).body.delivery;
    expect(detail).to.include({ status: 'dead', httpStatus: 503, attempts: 5, lastError: 'HTTP 503' });
    expect(detail.attemptLog.map((a: any) => [a.attempt, a.httpStatus, a.error, a.responseBody])).to.deep.equal(
      [1, 2, 3, 4, 5].map((n) => [n, 503, 'HTTP 503', 'down for maintenance']),
    );

    const health = (await api.get(base())).body.health;
    expect(health.failuresLastHour).to.equal(5);
    expect(health.breaker.consecutiveFailures).to.equal(5);
    const minutes = (await api.get(`${base()}/minutes`)).body.minutes;
    expect(minutes).to.have.length(60);
    expect(minutes.reduce((n: number, m: any) => n + m.failed, 0)).to.equal(5);
    // The first test's delivery, delivered at its first attempt and again by its retry.
    expect(minutes.reduce((n: number, m: any) => n + m.delivered, 0)).to.equal(2);
    expect(Date.parse(minutes[59].minute))
      .to.be.at.most(Date.now())
      .and.above(Date.now() - 60_000);

    // Retry this one: the receiver is back; the new attempt joins the log as the 6th.
    p.receiver.behave = () => ({ status: 200 });
    const retried = await api.post(`${base()}/deliveries/${id}/retry`);
    expect(retried.status, retried.text).to.equal(202);
    expect(retried.body.delivery).to.include({ id, status: 'pending' });
    const after = await eventually(
      () => api.get(`${base()}/deliveries/${id}`),
      (r) => r.body.delivery.status === 'delivered',
    );
    expect(after.body.delivery.attemptLog.map((a: any) => [a.attempt, a.httpStatus])).to.deep.equal([
      ...[1, 2, 3, 4, 5].map((n) => [n, 503]),
      [6, 200],
    ]);
    // A delivered one may be sent again too.
    expect((await api.post(`${base()}/deliveries/${id}/retry`)).status).to.equal(202);
    await eventually(
      () => api.get(`${base()}/deliveries/${id}`),
      (r) => r.body.delivery.attemptLog.length === 7 && r.body.delivery.status === 'delivered',
    );
  });

  it('retry: an unknown delivery → 404 DELIVERY_NOT_FOUND; an unfinished one → 409 DELIVERY_NOT_FINISHED; another subscription’s → 404', async () => {
    expect((await api.post(`${base()}/deliveries/del_nope/retry`)).body.error).to.equal('DELIVERY_NOT_FOUND');
    expect((await api.get(`${base()}/deliveries/del_nope`)).body.error).to.equal('DELIVERY_NOT_FOUND');
    p.receiver.behave = () => ({ status: 500 });
    await p.t.ctx.pool.query(
      `INSERT INTO walgate.deliveries (id, webhook_id, event_id, event_type, status, attempts, next_attempt_at, created_at)
       VALUES ('del_waiting', $1, 'evt_waiting', 'INSERT', 'retrying', 1, now() + interval '1 hour', now() - interval '2 hours')`,
      [webhookId],
    );
    const conflict = await api.post(`${base()}/deliveries/del_waiting/retry`);
    expect(conflict.status).to.equal(409);
    expect(conflict.body.error).to.equal('DELIVERY_NOT_FINISHED');
    // Its event is not kept: the payload is null, the rest is shown.
    expect((await api.get(`${base()}/deliveries/del_waiting`)).body.delivery).to.include({ payload: null, status: 'retrying' });

    const other = await api.post('/api/rest/_webhooks', {
      projectId: 'shop',
      environment: 'master',
      table: 'orders',
      events: ['DELETE'],
      url: `${p.receiver.url}/other`,
      secret: whsec(),
    });
    expect((await api.get(`/api/rest/_webhooks/${other.body.webhook.id}/deliveries/del_waiting`)).body.error).to.equal(
      'DELIVERY_NOT_FOUND',
    );
    await p.t.ctx.pool.query(`DELETE FROM walgate.deliveries WHERE id = 'del_waiting'`);
  });

  it('filters by status and time, pages with a cursor, refuses what it did not make', async () => {
    const all = (await api.get(`${base()}/deliveries`)).body.deliveries;
    expect(all).to.have.length(2);
    expect(Date.parse(all[0].createdAt)).to.be.at.least(Date.parse(all[1].createdAt));
    const first = await api.get(`${base()}/deliveries?limit=1`);
    expect(first.body.deliveries.map((d: any) => d.id)).to.deep.equal([all[0].id]);
    const second = await api.get(`${base()}/deliveries?limit=1&cursor=${first.body.nextCursor}`);
    expect(second.body.deliveries.map((d: any) => d.id)).to.deep.equal([all[1].id]);
    expect(second.body.nextCursor).to.equal(null);
    expect(
      (await api.get(`${base()}/deliveries?until=${encodeURIComponent(all[0].createdAt)}`)).body.deliveries.map((d: any) => d.id),
    ).to.deep.equal([all[1].id]);
    expect(
      (await api.get(`${base()}/deliveries?since=${encodeURIComponent(all[0].createdAt)}`)).body.deliveries.map((d: any) => d.id),
    ).to.deep.equal([all[0].id]);
    expect((await api.get(`${base()}/deliveries?status=pending`)).body.deliveries).to.deep.equal([]);

    for (const q of [
      'status=lost',
      'since=yesterday',
      'limit=0',
      'limit=101',
      'cursor=abc',
      'cursor=' + Buffer.from(JSON.stringify(['2020-01-01T00:00:00Z', "del_' OR 1=1"])).toString('base64url'),
      'extra=1',
    ]) {
      const res = await api.get(`${base()}/deliveries?${q}`);
      expect(res.status, q).to.equal(400);
      expect(res.body.error, q).to.equal('VALIDATION_ERROR');
    }
  });

  it('replay with dryRun counts the dead letters and changes nothing', async () => {
    p.receiver.behave = () => ({ status: 500 });
    await insertRow();
    await eventually(
      () => api.get(`${base()}/deliveries?status=dead`),
      (r) => r.body.deliveries?.length === 1,
    );
    const counted = await api.post(`${base()}/replay`, { dryRun: true });
    expect(counted.status).to.equal(202);
    expect(counted.body).to.deep.equal({ replayed: 1 });
    expect((await api.get(`${base()}/deliveries?status=dead`)).body.deliveries).to.have.length(1);
    p.receiver.behave = () => ({ status: 200 });
    const replayed = (await api.post(`${base()}/replay`, {})).body;
    expect(replayed).to.deep.include({ replayed: 1 });
    expect(replayed.replay).to.include({ state: 'done', count: 1, replayed: 1 });
    await eventually(
      () => api.get(`${base()}/deliveries?status=dead`),
      (r) => r.body.deliveries?.length === 0,
    );
  });

  it('rotation: during the grace webhook-signature verifies with either secret, the seed headers use the new one; then the new one alone', async () => {
    p.receiver.behave = () => ({ status: 200 });
    const newSecret = whsec();
    const patched = await api.patch(base(), { secret: newSecret });
    const graceEnds = Date.now() + GRACE_MS;
    expect(patched.status).to.equal(200);
    expect(patched.text).not.to.contain(newSecret.slice(6, 20));
    // Each change is found by its row: a replay of the test before may still arrive meanwhile.
    const during = await sentRow(nextId);
    expect(during.headers['webhook-signature']!.split(' ')).to.have.length(2);
    expect(verifies(newSecret, during), 'with the new secret').to.equal(true);
    expect(verifies(firstSecret, during), 'with the old secret').to.equal(true);
    expect(verifies(whsec(), during), 'with another secret').to.equal(false);
    expect(during.headers['x-webhook-signature']).to.equal(hexSignature(newSecret, during.body));
    expect(during.headers['x-service-signature']).to.equal(`sha256=${hexSignature(newSecret, during.body)}`);

    // Both are encrypted at rest.
    const { rows } = await p.t.ctx.pool.query('SELECT secret, previous_secret FROM walgate.webhooks WHERE id = $1', [webhookId]);
    for (const sealed of [rows[0].secret, rows[0].previous_secret] as Buffer[]) {
      expect(sealed.includes(Buffer.from(newSecret.slice(6)))).to.equal(false);
      expect(sealed.includes(Buffer.from(firstSecret.slice(6)))).to.equal(false);
    }

    await new Promise((r) => setTimeout(r, graceEnds + 100 - Date.now()));
    const afterGrace = await sentRow(nextId);
    expect(afterGrace.headers['webhook-signature']!.split(' ')).to.have.length(1);
    expect(verifies(newSecret, afterGrace)).to.equal(true);
    expect(verifies(firstSecret, afterGrace)).to.equal(false);

    const logged = p.t.logs.text;
    for (const s of [newSecret, firstSecret]) expect(logged).not.to.contain(s.slice(6));
  });
});

describe('delivery log with WEBHOOK_KEEP_PAYLOADS=false', function () {
  this.timeout(60_000);
  let p: Pipeline;

  before(async () => {
    p = await startPipeline({ WEBHOOK_KEEP_PAYLOADS: 'false' });
  });
  after(() => p?.close());

  it('keeps neither body nor headers of a first-try delivery: it cannot be sent again', async () => {
    const api = new HttpClient(p.t.url, {
      authorization: `Bearer ${await p.t.managementToken('shop')}`,
      'x-project-id': 'shop',
      environment: 'master',
    });
    const webhookId = await p.subscribe();
    await p.writer.query("INSERT INTO shop_master.orders (id, status, amount) VALUES (1, 'paid', 1)");
    const list = await eventually(
      () => api.get(`/api/rest/_webhooks/${webhookId}/deliveries`),
      (r) => r.body.deliveries?.[0]?.status === 'delivered',
    );
    const id = list.body.deliveries[0].id;
    const got = (await api.get(`/api/rest/_webhooks/${webhookId}/deliveries/${id}`)).body.delivery;
    expect(got).to.include({ payload: null, requestHeaders: null, responseHeaders: null });
    const { rows } = await p.t.ctx.pool.query('SELECT payload, request_headers, response_headers FROM walgate.deliveries WHERE id = $1', [
      id,
    ]);
    expect(rows[0]).to.deep.equal({ payload: null, request_headers: null, response_headers: null });
    const retry = await api.post(`/api/rest/_webhooks/${webhookId}/deliveries/${id}/retry`);
    expect(retry.status).to.equal(409);
    expect(retry.body.error).to.equal('DELIVERY_PAYLOAD_GONE');
  });
});
