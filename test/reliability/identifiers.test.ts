// No delivery worker runs in this file: the public address below is only validated, never contacted.
import { expect } from 'chai';
import fc from 'fast-check';
import pg from 'pg';
import { quoteIdent } from '../../src/core/db/identifiers.js';
import type { WalTailer } from '../../src/tailer/tailer.js';
import { startTestApi, type TestApi } from '../support/api.js';
import { HttpClient } from '../support/http.js';
import { startTailer, waitForDeliveries, waitForLeader } from '../tailer/support.js';

// Names users give their tables and columns go everywhere walgate goes: the management API's
// checks, ALTER TABLE / ALTER PUBLICATION, the tailer's matching of WAL relations to
// subscriptions, filters and selections, and the JSON keys of the payload. Whatever the name —
// quotes, dots, spaces, unicode, SQL — it is either refused with a 400 or used exactly: the right
// rows are delivered, with the names as written, and nothing else in the database is touched.

const URL_ = 'https://93.184.216.34/hooks';
const SECRET = 'identifier-secret-0123456789';

const TABLES = [
  "Odd.Table 'x'",
  '"quoted"',
  'Ördérs', // NFC
  'Ördérs'.normalize('NFD'), // another table to Postgres: the bytes differ
  'orders; DROP TABLE shop_master.victim; --',
  'with space',
  '$dollar',
  'emoji 🚀',
  'UPPER',
  'x'.repeat(63),
  '__proto__',
];
// "constructor" is a key a JavaScript object holds already: as a filter, a selection and a body key it stays a plain column name.
const COLUMNS = ['weird "col"', 'dotted.col', 'ünï', 'select', "s'); DROP TABLE shop_master.victim; --", 'constructor'];

describe('reliability: identifiers from end to end', function () {
  this.timeout(120_000);
  let t: TestApi;
  let api: HttpClient;
  let writer: pg.Client;
  let tailer: WalTailer;

  before(async () => {
    t = await startTestApi();
    await t.provision({ projectId: 'shop', name: 'master' });
    writer = new pg.Client({ connectionString: t.database.url });
    await writer.connect();
    await writer.query('CREATE TABLE shop_master.victim (id int PRIMARY KEY)');
    api = new HttpClient(t.url, {
      authorization: `Bearer ${await t.managementToken('shop')}`,
      'x-project-id': 'shop',
      environment: 'master',
    });
    tailer = startTailer(t.ctx, t.database.url);
    await waitForLeader(tailer);
  });
  after(async () => {
    await tailer?.stop();
    await writer?.end();
    await t?.close();
  });

  /** Creates `table` with an id and the given text columns, subscribes with a filter and a selection on them, writes a matching and a non-matching row. */
  async function roundTrip(table: string, columns: string[], rowId: number): Promise<void> {
    const q = (name: string) => `shop_master.${quoteIdent(name)}`;
    await writer.query(`CREATE TABLE ${q(table)} (id int PRIMARY KEY, ${columns.map((c) => `${quoteIdent(c)} text`).join(', ')})`);
    const [filtered, ...rest] = columns;
    const res = await api.post('/api/rest/_webhooks', {
      projectId: 'shop',
      environment: 'master',
      table,
      events: ['INSERT', 'UPDATE'],
      url: URL_,
      secret: SECRET,
      filter: { [filtered!]: 'yes' },
      select: ['id', filtered!, ...rest.slice(0, 1)],
    });
    expect(res.status, `${JSON.stringify(table)}: ${res.text}`).to.equal(201);
    expect(res.body.webhook).to.deep.include({ table, filter: { [filtered!]: 'yes' } });
    const wh = res.body.webhook.id as string;
    const insert = `INSERT INTO ${q(table)} (id, ${columns.map(quoteIdent).join(', ')}) VALUES ($1, ${columns.map((_, i) => `$${i + 2}`).join(', ')})`;
    await writer.query(insert, [rowId, 'no', ...rest.map((c) => `value of ${c}`)]);
    await writer.query(insert, [rowId + 1, 'yes', ...rest.map((c) => `value of ${c}`)]);
    const [d] = await waitForDeliveries(t.ctx, 1, wh);
    expect(d!.payload.table).to.equal(table);
    // Built from entries, so that a column named "__proto__" is an own key here as in the body.
    const want = Object.fromEntries([
      ['id', rowId + 1],
      [filtered!, 'yes'],
      ...(rest[0] === undefined ? [] : [[rest[0], `value of ${rest[0]}`]]),
    ]);
    expect(d!.payload.record).to.deep.equal(want);
    // Only the matching row: a second delivery would show a filter that matched nothing, or everything.
    await writer.query(`UPDATE ${q(table)} SET ${quoteIdent(filtered!)} = 'yes' WHERE id = $1`, [rowId]);
    const both = await waitForDeliveries(t.ctx, 2, wh);
    expect(both.map((x) => [x.payload.event, x.payload.record.id])).to.deep.equal([
      ['INSERT', rowId + 1],
      ['UPDATE', rowId],
    ]);
    expect(both[1]!.payload.changed_fields).to.deep.equal([filtered]);
    expect((await api.delete(`/api/rest/_webhooks/${wh}`)).status).to.equal(204);
  }

  for (const [i, table] of TABLES.entries()) {
    it(`table ${JSON.stringify(table)}: watched, filtered, selected and delivered by its exact name`, async () => {
      await roundTrip(table, [...COLUMNS.slice(i % COLUMNS.length), ...COLUMNS.slice(0, i % COLUMNS.length)], 10 * i + 1);
      expect((await writer.query('SELECT to_regclass($1) AS t', ['shop_master.victim'])).rows[0].t).to.equal('shop_master.victim');
    });
  }

  it('generated names (any code point but NUL, 1 to 63 bytes) round-trip the same way', async () => {
    const identifier = fc
      .string({ unit: 'binary', minLength: 1, maxLength: 20 })
      // Lone surrogates are not text: they reach Postgres as U+FFFD, another name.
      .filter((s) => !s.includes('\0') && !/\p{Cs}/u.test(s) && Buffer.byteLength(s) <= 63);
    let n = 0;
    await fc.assert(
      fc.asyncProperty(identifier, fc.uniqueArray(identifier, { minLength: 2, maxLength: 3 }), async (table, columns) => {
        n++;
        const name = `${table} #${n}`; // distinct tables across runs (fast-check may repeat a value)
        // The first column is the filter's key, and a "__proto__" key is refused (next test).
        if (Buffer.byteLength(name) > 63 || columns.includes('id') || columns[0] === '__proto__') return;
        await roundTrip(name, columns, 1000 + 10 * n);
      }),
      { numRuns: Number(process.env.PROPERTY_RUNS ?? 12) },
    );
  });

  it('a column named "__proto__" is selected and delivered as a plain key; as a filter key it is refused with a violation', async () => {
    await roundTrip('proto columns', ['status', '__proto__'], 5001);
    const refused = await api.post('/api/rest/_webhooks', {
      projectId: 'shop',
      environment: 'master',
      table: 'proto columns',
      events: ['INSERT'],
      url: URL_,
      secret: SECRET,
      filter: JSON.parse('{"__proto__": "yes"}'),
    });
    expect(refused.status).to.equal(400);
    expect(refused.body.violations).to.deep.equal([{ path: 'filter.__proto__', message: 'is not accepted as a name' }]);
  });

  it('names that are not tables or columns of the environment are refused with a violation, and nothing is altered', async () => {
    await writer.query('CREATE TABLE shop_master.plain (id int PRIMARY KEY, status text)');
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ table: 'plain; DROP TABLE shop_master.victim' }, 'table'],
      [{ table: 'shop_master.plain' }, 'table'], // a qualified name is not a name in the schema
      [{ table: '"plain"' }, 'table'], // quotes are part of the name, not quoting
      [{ table: 'PLAIN' }, 'table'], // exact: no case folding
      [{ table: 'public.victim' }, 'table'],
      [{ table: 'plain', filter: { 'status; DROP TABLE shop_master.victim': 'x' } }, 'filter.status; DROP TABLE shop_master.victim'],
      [{ table: 'plain', filter: { '"status"': 'x' } }, 'filter."status"'],
      [{ table: 'plain', select: ['id', 'plain.status'] }, 'select.1'],
      [{ table: 'plain', select: ['id', '*'] }, 'select.1'],
    ];
    for (const [change, path] of cases) {
      const res = await api.post('/api/rest/_webhooks', {
        projectId: 'shop',
        environment: 'master',
        table: 'plain',
        events: ['INSERT'],
        url: URL_,
        secret: SECRET,
        ...change,
      });
      expect(res.status, `${JSON.stringify(change)}: ${res.text}`).to.equal(400);
      expect(
        res.body.violations.map((v: { path: string }) => v.path),
        JSON.stringify(change),
      ).to.include(path);
    }
    const published = await t.ctx.pool.query(
      `SELECT 1 FROM pg_publication_tables WHERE pubname = 'walgate' AND tablename IN ('plain', 'victim')`,
    );
    expect(published.rowCount).to.equal(0);
    expect((await writer.query('SELECT to_regclass($1) AS t', ['shop_master.victim'])).rows[0].t).to.equal('shop_master.victim');
  });
});
