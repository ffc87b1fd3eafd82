import { expect } from 'chai';
import { eventually, startPipeline, type Pipeline } from '../delivery/support.js';
import { HttpClient } from '../support/http.js';
import { waitUntilCaughtUp } from '../tailer/support.js';

// The filter language end to end: subscriptions created through the management API, one scripted
// sequence of INSERTs, UPDATEs and DELETEs written by a plain pg client, the real tailer and
// delivery engine, a real HTTPS receiver. Each case asserts exactly which changes its receiver
// path got — numeric (beyond a double's digits), text, timestamps with offsets, dates, booleans,
// jsonb paths and NULLs, the old row, and what an UPDATE changed.

const SECRET = 'filter-test-secret-0123456789';

/**
 * The changes, in commit order. A change is named by its kind, its row id and, for an UPDATE,
 * the columns it changed (its payload's changed_fields).
 */
const SCRIPT: Array<[label: string, sql: string]> = [
  [
    'I1',
    `INSERT INTO shop_master.items VALUES (1, 100.5, 'alpha', '2026-01-01T10:00:00+02:00', '2026-01-01', true, '{"a": {"b": 1}}', NULL)`,
  ],
  [
    'I2',
    `INSERT INTO shop_master.items VALUES (2, 99.9999999999, 'beta', '2026-01-01T09:00:00Z', '2025-12-31', false, '{"a": {"b": "x"}}', NULL)`,
  ],
  ['I3', `INSERT INTO shop_master.items VALUES (3, 12345678901234567890.123456789, NULL, NULL, NULL, NULL, NULL, NULL)`],
  ['U1:total', `UPDATE shop_master.items SET total = 150 WHERE id = 1`],
  ['U2:name,note', `UPDATE shop_master.items SET name = 'gamma', note = 'n' WHERE id = 2`],
  ['U3:note', `UPDATE shop_master.items SET note = 'x' WHERE id = 3`],
  ['U1:name', `UPDATE shop_master.items SET name = 'alphabet' WHERE id = 1`],
  ['D2', `DELETE FROM shop_master.items WHERE id = 2`],
  ['D3', `DELETE FROM shop_master.items WHERE id = 3`],
];

/** Each filter and exactly the changes it lets through. */
const CASES: Array<[name: string, filter: Record<string, unknown>, delivered: string[]]> = [
  ['equality, as before (the new row; the deleted row for DELETE)', { name: 'alpha' }, ['I1', 'U1:total']],
  ['equality on the deleted row', { name: 'gamma', $not: { $changed: ['name'] } }, ['D2']],
  ['numeric $gt a number', { total: { $gt: 100 } }, ['I1', 'I3', 'U1:total', 'U3:note', 'U1:name', 'D3']],
  ['numeric $lt a decimal string', { total: { $lt: '100' } }, ['I2', 'U2:name,note', 'D2']],
  ['numeric beyond a double: every digit counts', { total: { $gt: '12345678901234567890.1234567889' } }, ['I3', 'U3:note', 'D3']],
  ['numeric equal to every digit', { total: { $eq: '12345678901234567890.1234567890' } }, ['I3', 'U3:note', 'D3']],
  // 08:00Z and 09:00Z render as …T08:00:00+00:00 and …T09:00:00+00:00; as text both would sort before "…T10:30…+02:00".
  ['timestamptz as instants, whatever the offsets', { at: { $lt: '2026-01-01T10:30:00+02:00' } }, ['I1', 'U1:total', 'U1:name']],
  ['timestamptz $in', { at: { $in: ['2026-01-01T10:00:00+01:00', '2026-01-01T07:00:00Z'] } }, ['I2', 'U2:name,note', 'D2']],
  ['date $lt', { day: { $lt: '2026-01-01' } }, ['I2', 'U2:name,note', 'D2']],
  ['boolean', { flag: false }, ['I2', 'U2:name,note', 'D2']],
  ['boolean $ne takes NULL (it is not true)', { flag: { $ne: true } }, ['I2', 'I3', 'U2:name,note', 'U3:note', 'D2', 'D3']],
  ['jsonb path, a number', { data: { $path: ['a', 'b'], $eq: 1 } }, ['I1', 'U1:total', 'U1:name']],
  ['jsonb path, a string', { data: { $path: ['a', 'b'], $in: ['x', 'y'] } }, ['I2', 'U2:name,note', 'D2']],
  ['NULL column', { name: { $isNull: true } }, ['I3', 'U3:note', 'D3']],
  ['jsonb NULL', { data: null }, ['I3', 'U3:note', 'D3']],
  ['text $startsWith', { name: { $startsWith: 'alph' } }, ['I1', 'U1:total', 'U1:name']],
  ['text $gte by code point', { name: { $gte: 'b' } }, ['I2', 'U2:name,note', 'D2']],
  ['$changed', { $changed: ['total', 'flag'] }, ['U1:total']],
  ['$changedFrom and $changedTo', { name: { $changedFrom: 'beta', $changedTo: 'gamma' } }, ['U2:name,note']],
  ['$changedTo alone', { name: { $changedTo: 'alphabet' } }, ['U1:name']],
  ['$changedFrom alone', { name: { $changedFrom: 'alpha' } }, ['U1:name']],
  ['$old', { $old: { name: 'beta' } }, ['U2:name,note']],
  ['$old on a DELETE is the deleted row', { $old: { total: { $lt: 100 } }, $not: { $changed: ['name'] } }, ['D2']],
  [
    '$or, $not and $changed together',
    { $or: [{ flag: true }, { total: { $gt: 1000 } }], $not: { $changed: ['name'] } },
    ['I1', 'I3', 'U1:total', 'U3:note', 'D3'],
  ],
  ['$and of $nin', { $and: [{ name: { $nin: ['alpha', 'beta'] } }, { total: { $lte: 150 } }] }, ['U2:name,note', 'U1:name', 'D2']],
];

function label(payload: { event: string; record: { id: number }; changed_fields: string[] }): string {
  const base = `${payload.event[0]}${payload.record.id}`;
  return payload.event === 'UPDATE' ? `${base}:${payload.changed_fields.join(',')}` : base;
}

describe('webhooks: the filter language, end to end', function () {
  this.timeout(120_000);
  let p: Pipeline;
  let api: HttpClient;

  before(async () => {
    // Thirty subscriptions open their connections at once on a shared test machine: the
    // pipeline's 1 s request time-out (made for failure tests) would turn slow TLS handshakes into
    // retries and breakers, which this file is not about.
    p = await startPipeline({ WEBHOOK_TIMEOUT_MS: '20000' });
    await p.writer.query(`CREATE TABLE shop_master.items (
      id int PRIMARY KEY, total numeric(40,10), name text, at timestamptz, day date, flag boolean, data jsonb, note text)`);
    api = new HttpClient(p.t.url, {
      authorization: `Bearer ${await p.t.managementToken('shop')}`,
      'x-project-id': 'shop',
      environment: 'master',
    });
  });
  after(() => p?.close());

  /**
   * Every matched change delivered: the tailer has settled everything written (each delivery
   * delivered, or parked in the retry queue), and nothing is left in the queue. A filter that
   * let an extra change through has its delivery among them by then.
   */
  async function settled(): Promise<void> {
    await waitUntilCaughtUp(p.t.ctx, p.tailer);
    await eventually(
      async () => (await p.t.ctx.pool.query(`SELECT count(*)::int AS n FROM walgate.deliveries WHERE status <> 'delivered'`)).rows[0].n,
      (n) => n === 0,
      30_000,
    );
  }

  const create = (filter: unknown, path: string, table = 'items') =>
    api.post('/api/rest/_webhooks', {
      projectId: 'shop',
      environment: 'master',
      table,
      events: ['INSERT', 'UPDATE', 'DELETE'],
      url: `${p.receiver.url}${path}`,
      secret: SECRET,
      filter,
    });

  it('delivers exactly the changes each filter takes, over INSERT, UPDATE and DELETE', async () => {
    for (const [i, [name, filter]] of CASES.entries()) {
      const res = await create(filter, `/case-${i}`);
      expect(res.status, `${name}: ${res.text}`).to.equal(201);
      expect(res.body.webhook.filter, name).to.deep.equal(filter);
    }
    const all = await create(null, '/all');
    expect(all.status, all.text).to.equal(201);
    for (const [, sql] of SCRIPT) await p.writer.query(sql);
    await settled();
    const received = (path: string): string[] =>
      p.receiver.requests.filter((r) => r.path === path).map((r) => label(JSON.parse(r.body) as Parameters<typeof label>[0]));
    // Every change reaches the unfiltered subscription: the labels are what was written.
    expect(received('/all')).to.have.members(SCRIPT.map(([l]) => l));
    for (const [i, [name, filter, delivered]] of CASES.entries()) {
      // Sorted: without `ordering`, one subscription's deliveries may overtake each other.
      expect(received(`/case-${i}`).sort(), `${name}: ${JSON.stringify(filter)}`).to.deep.equal([...delivered].sort());
    }
  });

  it('a filtered-out change leaves no delivery row', async () => {
    const res = await create({ name: 'nobody' }, '/nobody');
    await p.writer.query(`INSERT INTO shop_master.items (id, name) VALUES (10, 'somebody')`);
    await settled();
    const { rows } = await p.t.ctx.pool.query('SELECT count(*)::int AS n FROM walgate.deliveries WHERE webhook_id = $1', [
      res.body.webhook.id,
    ]);
    expect(rows[0].n).to.equal(0);
  });

  it('refuses, at create and update, a filter that does not fit the table, saying where', async () => {
    const cases: Array<[unknown, string]> = [
      [{ nope: 1 }, 'filter.nope'],
      [{ total: { $gt: 'ten' } }, 'filter.total.$gt'],
      [{ at: { $gt: '2026-01-01T00:00:00' } }, 'filter.at.$gt'],
      [{ flag: { $lt: true } }, 'filter.flag.$lt'],
      [{ name: { $path: ['a'], $eq: 1 } }, 'filter.name.$path'],
      [{ $or: [{ name: 'a' }, { $changed: ['gone'] }] }, 'filter.$or.1.$changed.0'],
      [{ name: { $regex: '^(a+)+$' } }, 'filter.name.$regex'],
    ];
    const id = (await create({ name: 'x' }, '/patched')).body.webhook.id as string;
    for (const [filter, path] of cases) {
      for (const res of [await create(filter, '/refused'), await api.patch(`/api/rest/_webhooks/${id}`, { filter })]) {
        expect(res.status, `${JSON.stringify(filter)}: ${res.text}`).to.equal(400);
        expect(res.body.error).to.equal('VALIDATION_ERROR');
        expect(res.body.violations.map((v: { path: string }) => v.path)).to.deep.equal([path]);
      }
    }
  });

  it('a column a filter names deep inside, dropped later, makes the subscription unhealthy', async () => {
    await p.writer.query('CREATE TABLE shop_master.drifting (id int PRIMARY KEY, status text, extra text)');
    const res = await create({ $or: [{ status: 'paid' }, { $old: { extra: { $isNull: false } } }] }, '/drift', 'drifting');
    expect(res.status, res.text).to.equal(201);
    const id = res.body.webhook.id as string;
    expect((await api.get(`/api/rest/_webhooks/${id}`)).body.webhook.problems).to.deep.equal([]);
    await p.writer.query('ALTER TABLE shop_master.drifting DROP COLUMN extra');
    const problems = (await api.get(`/api/rest/_webhooks/${id}`)).body.webhook.problems as Array<{ code: string; message: string }>;
    expect(problems.map((x) => x.code)).to.deep.equal(['FILTER_COLUMN_MISSING']);
    expect(problems[0]!.message).to.contain('(extra)');
    // The metric counts it too, from the catalog, and only it: the filters of the first test
    // ($or, $old, $changed, $path …) name no missing column, though their keys are no columns.
    const metrics = (await new HttpClient(p.t.url).get('/metrics')).text;
    expect(metrics).to.match(/walgate_webhook_problems\{code="FILTER_COLUMN_MISSING"\} 1\b/);
  });
});
