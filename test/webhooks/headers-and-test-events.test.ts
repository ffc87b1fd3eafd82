import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { Webhook } from 'standardwebhooks';
import { eventually, startPipeline, type Pipeline } from '../delivery/support.js';
import { HttpClient } from '../support/http.js';

// Custom request headers and test events on the whole path: the API takes them, a real HTTPS
// receiver gets them (first attempts and retries), and the header values show nowhere.

const whsec = () => `whsec_${randomBytes(32).toString('base64')}`;
const API_KEY = `sk_live_${randomBytes(16).toString('hex')}`;

describe('custom request headers and test events', function () {
  this.timeout(60_000);
  let p: Pipeline;
  let api: HttpClient;
  let webhookId: string;
  let nextId = 1;
  const secret = whsec();
  const answers: string[] = [];
  const base = () => `/api/rest/_webhooks/${webhookId}`;
  const insertRow = () => p.writer.query('INSERT INTO shop_master.orders (id, status, amount) VALUES ($1, $2, 9.99)', [nextId++, 'paid']);
  const record = <T extends { text: string }>(r: T) => (answers.push(r.text), r);

  before(async () => {
    p = await startPipeline({ WEBHOOK_BREAKER_FAILURES: '100' });
    api = new HttpClient(p.t.url, {
      authorization: `Bearer ${await p.t.managementToken('shop')}`,
      'x-project-id': 'shop',
      environment: 'master',
    });
    const res = record(
      await api.post('/api/rest/_webhooks', {
        projectId: 'shop',
        environment: 'master',
        table: 'orders',
        events: ['INSERT', 'UPDATE'],
        url: `${p.receiver.url}/hook`,
        secret,
        headers: { 'X-Api-Key': API_KEY, 'X-Route': 'eu-1' },
      }),
    );
    expect(res.status, res.text).to.equal(201);
    webhookId = res.body.webhook.id;
    expect(res.body.webhook.headers).to.deep.equal(['x-api-key', 'x-route']);
  });
  after(() => p?.close());

  it('stores the values sealed: not in the row in clear', async () => {
    const { rows } = await p.t.ctx.pool.query('SELECT header_names, header_values FROM walgate.webhooks WHERE id = $1', [webhookId]);
    expect(rows[0].header_names).to.deep.equal(['x-api-key', 'x-route']);
    expect(rows[0].header_values.toString('latin1')).not.to.contain(API_KEY).and.not.contain('eu-1');
  });

  it('sends the headers on the first attempt and on every retry', async () => {
    const before = p.receiver.requests.length;
    p.receiver.behave = (_r, i) => (i === before ? { status: 503 } : { status: 200 });
    await insertRow();
    const got = (await p.receiver.waitFor(before + 2)).slice(before, before + 2);
    for (const r of got) expect(r.headers).to.include({ 'x-api-key': API_KEY, 'x-route': 'eu-1' });
    expect(got.map((r) => r.headers['webhook-id'])).to.satisfy((ids: string[]) => ids[0] === ids[1]);
    p.receiver.behave = () => ({ status: 200 });
  });

  it('refuses reserved, repeated, too many and malformed headers with VALIDATION_ERROR', async () => {
    for (const name of [
      'Content-Type',
      'host',
      'Webhook-Signature',
      'webhook-id',
      'X-Service-Signature',
      'Connection',
      'Transfer-Encoding',
      'x-walgate-test',
    ]) {
      const res = record(await api.patch(base(), { headers: { [name]: 'x' } }));
      expect(res.status, name).to.equal(400);
      expect(res.body.error).to.equal('VALIDATION_ERROR');
      expect(JSON.stringify(res.body.violations)).to.contain('headers');
    }
    const many = Object.fromEntries(Array.from({ length: 11 }, (_, i) => [`x-h${i}`, 'v']));
    expect(record(await api.patch(base(), { headers: many })).body.error).to.equal('VALIDATION_ERROR');
    expect(record(await api.patch(base(), { headers: { 'X-A': '1', 'x-a': '2' } })).body.error).to.equal('VALIDATION_ERROR');
    expect(record(await api.patch(base(), { headers: { 'X-A': 'a\r\nX-Injected: 1' } })).body.error).to.equal('VALIDATION_ERROR');
    expect(record(await api.patch(base(), { headers: { 'Bad Name': '1' } })).body.error).to.equal('VALIDATION_ERROR');
    const row = (await api.get(base())).body.webhook;
    expect(row.headers).to.deep.equal(['x-api-key', 'x-route']); // unchanged
  });

  it('sends a test event: signed (standardwebhooks), marked as a test, shaped by the table, in the delivery log', async () => {
    const before = p.receiver.requests.length;
    const res = record(await api.post(`${base()}/test`));
    expect(res.status, res.text).to.equal(202);
    expect(res.body.delivery).to.include({ status: 'pending', event: 'INSERT' });
    const { eventId } = res.body.delivery;
    const [got] = (await p.receiver.waitFor(before + 1)).slice(before);
    const payload = new Webhook(secret.slice('whsec_'.length)).verify(got!.body, got!.headers) as Record<string, any>;
    expect(() => new Webhook(randomBytes(24).toString('base64')).verify(got!.body, got!.headers)).to.throw();
    expect(payload).to.include({ id: eventId, test: true, table: 'orders', event: 'INSERT', project_id: 'shop', environment: 'master' });
    expect(payload.record).to.deep.equal({ id: 1, status: 'sample', amount: 19.9 });
    expect(got!.headers).to.include({ 'x-walgate-test': 'true', 'webhook-id': eventId, 'x-api-key': API_KEY });
    const log = await eventually(
      () => api.get(`${base()}/deliveries`),
      (r) => r.body.deliveries.some((d: any) => d.eventId === eventId && d.status === 'delivered'),
    );
    expect(log.status).to.equal(200);
    // A real change carries no test mark.
    const n = p.receiver.requests.length;
    await insertRow();
    const [real] = (await p.receiver.waitFor(n + 1)).slice(n);
    expect(real!.headers).not.to.have.property('x-walgate-test');
    expect(JSON.parse(real!.body)).not.to.have.property('test');
  });

  it('finds an event across subscriptions; lists environments; health over 24 hours and 7 days', async () => {
    const [last] = p.receiver.requests.slice(-1);
    const eventId = last!.headers['webhook-id']!;
    // The history row is written after the receiver's answer (batched with others, journal.ts).
    const found = record(
      await eventually(
        () => api.get(`/api/rest/_webhooks/_deliveries?eventId=${eventId}`),
        (r) => r.status !== 200 || r.body.deliveries.length > 0,
      ),
    );
    expect(found.status, found.text).to.equal(200);
    expect(found.body.deliveries).to.have.length(1);
    expect(found.body.deliveries[0]).to.include({ webhookId, table: 'orders', eventId, status: 'delivered' });
    expect((await api.get('/api/rest/_webhooks/_deliveries?eventId=evt_nope')).body.deliveries).to.deep.equal([]);
    expect((await api.get('/api/rest/_webhooks/_deliveries')).body.error).to.equal('VALIDATION_ERROR');

    await p.t.provision({ projectId: 'shop', name: 'staging' });
    const envs = record(await api.get('/api/rest/_webhooks/_environments'));
    expect(envs.body.environments).to.deep.equal([{ name: 'master' }, { name: 'staging' }]);

    const health = record(await api.get(`${base()}/health`));
    expect(health.status, health.text).to.equal(200);
    const [day, week] = health.body.windows;
    expect(day).to.include({ window: '24h', dead: 0, attemptsFailed: 1 });
    expect(day.delivered).to.be.at.least(3);
    expect(day.successRate).to.be.above(0.5).and.below(1);
    expect(day.latencyP50Ms).to.be.a('number');
    expect(day.latencyP95Ms).to.be.at.least(day.latencyP50Ms);
    expect(week.window).to.equal('7d');
    const list = record(await api.get('/api/rest/_webhooks'));
    expect(list.body.webhooks[0].breaker).to.deep.equal({ state: 'closed', openUntil: null, consecutiveFailures: 0 });
  });

  it('null removes the headers; the values were in no answer and no log line', async () => {
    const res = record(await api.patch(base(), { headers: null }));
    expect(res.status, res.text).to.equal(200);
    expect(res.body.webhook.headers).to.deep.equal([]);
    const n = p.receiver.requests.length;
    await insertRow();
    const [got] = (await p.receiver.waitFor(n + 1)).slice(n);
    expect(got!.headers).not.to.have.property('x-api-key');
    for (const d of (await api.get(`${base()}/deliveries`)).body.deliveries) record(await api.get(`${base()}/deliveries/${d.id}`));
    expect(answers.join('\n')).not.to.contain(API_KEY).and.not.contain('eu-1');
    expect(p.t.logs.text).not.to.contain(API_KEY);
  });

  it('types a test event as a real INSERT of the table: every column the same JSON type (Postgres renders both)', async () => {
    await p.writer.query(`CREATE TYPE shop_master.mood AS ENUM ('calm', 'busy')`);
    await p.writer.query(
      `CREATE TABLE shop_master.kinds (id bigint PRIMARY KEY, price numeric(10,2), ratio float8, ok boolean, doc jsonb,
         tags text[], counts int[], at timestamptz, local_at timestamp, day date, ref uuid, mood shop_master.mood,
         code varchar(3), span interval)`,
    );
    const created = await api.post('/api/rest/_webhooks', {
      ...{ projectId: 'shop', environment: 'master', table: 'kinds', events: ['INSERT'] },
      ...{ url: `${p.receiver.url}/kinds`, secret },
    });
    expect(created.status, created.text).to.equal(201);
    const hook = `/api/rest/_webhooks/${created.body.webhook.id}`;
    const seen = p.receiver.requests.length;
    const test = await api.post(`${hook}/test`);
    expect(test.status, test.text).to.equal(202);
    await p.receiver.waitFor(seen + 1);
    await p.writer.query(
      `INSERT INTO shop_master.kinds VALUES (7, 19.90, 0.5, false, '{"a": [1]}', '{x,y}', '{3}', now(), now(), now(),
         gen_random_uuid(), 'busy', 'abc', '2 days')`,
    );
    const bodies = (await p.receiver.waitFor(seen + 2)).slice(seen).map((r) => JSON.parse(r.body) as Record<string, any>);
    const sample = bodies.find((b) => b.test === true)!.record as Record<string, unknown>;
    const real = bodies.find((b) => b.test === undefined)!.record as Record<string, unknown>;
    const jsonType = (v: unknown): string =>
      v === null ? 'null' : Array.isArray(v) ? `array of ${[...new Set(v.map(jsonType))].join()}` : typeof v;
    const typesOf = (r: Record<string, unknown>) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, jsonType(v)]));
    expect(typesOf(sample)).to.deep.equal(typesOf(real));
    expect(typesOf(real)).to.include({ id: 'number', price: 'number', ok: 'boolean', doc: 'object', tags: 'array of string' });
    expect(typesOf(real)).to.include({ counts: 'array of number', at: 'string', ref: 'string', mood: 'string' });
    // Values as Postgres renders them: an enum's label, a timestamp with its offset, a varchar that fits.
    expect(sample).to.include({ mood: 'calm', code: 'sam' });
    expect(sample.at).to.match(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?\+00:00$/);
  });
});
