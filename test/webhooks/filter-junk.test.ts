import { expect } from 'chai';
import fc from 'fast-check';
import { parseFilter } from '../../src/tailer/filter/language.js';
import type { ValueKind } from '../../src/tailer/filter/kinds.js';
import { startTestApi, type TestApi } from '../support/api.js';
import { HttpClient } from '../support/http.js';

// Hostile filters through the HTTP API: 500 documents of random junk — operator-shaped and not,
// deep, wide, with numbers JSON cannot keep — sent as raw JSON at create and at PATCH. Each is
// a 400 VALIDATION_ERROR naming a place in the filter, or (when the junk happens to mean
// something) a 201/200 for a document the language reads without a refusal; never a 5xx, and
// every answer quick.

const PUBLIC_URL = 'https://93.184.216.34/hooks/filters'; // a public address: only validated, never called
const KINDS = new Map<string, ValueKind>([
  ['id', 'numeric'],
  ['total', 'numeric'],
  ['status', 'text'],
  ['at', 'timestamptz'],
  ['flag', 'boolean'],
  ['data', 'json'],
]);

const KEYS = [
  ...['$and', '$or', '$not', '$old', '$changed', '$eq', '$ne', '$lt', '$lte', '$gt', '$gte', '$in', '$nin', '$isNull'],
  ...['$startsWith', '$changedFrom', '$changedTo', '$path', '$regex', '$where', '$expr', 'constructor', 'toString', 'hasOwnProperty'],
  ...[...KINDS.keys(), 'nope', '', '$', 'status.x'],
];
const scalar = fc.oneof(
  fc.constantFrom(null, true, false, 0, -0, 1, 100.5, 2 ** 53 + 2, -1e-300, 'paid', '', '2026-01-01T00:00:00Z', '12.50', 'NaN', 'infinity'),
  fc.string({ maxLength: 8 }),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
);
const { node: junk } = fc.letrec<{ node: unknown }>((tie) => ({
  node: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    scalar,
    fc.array(tie('node'), { maxLength: 4 }),
    fc.dictionary(fc.oneof(fc.constantFrom(...KEYS), fc.string({ maxLength: 4 })), tie('node'), { maxKeys: 4 }),
  ),
}));
/** JSON text: most from the structures above; some that no JS value writes (1e400, nesting past every limit, a long list). */
const junkText = fc.oneof(
  { weight: 8, arbitrary: junk.map((v) => JSON.stringify(v)) },
  fc.constantFrom('{"total": 1e400}', '{"total": {"$gt": -1e400}}', '{"data": {"$path": ["a"], "$eq": 1e999}}'),
  fc.nat({ max: 60 }).map((n) => `${'{"$not":'.repeat(n)}{"status":"x"}${'}'.repeat(n)}`),
  fc.nat({ max: 60 }).map((n) => `{"$or":[${Array.from({ length: n * 5 }, (_, i) => `{"id":${i}}`).join(',')}]}`),
  fc.nat({ max: 3000 }).map((n) => `{"status":{"$in":[${Array.from({ length: n }, () => '"x"').join(',')}]}}`),
  fc.nat({ max: 200 }).map((n) => `{"status":{"$path":[${Array.from({ length: n }, () => '"a"').join(',')}],"$eq":1}}`),
);

describe('webhooks: 500 junk filters through the API', function () {
  this.timeout(180_000);
  let t: TestApi;
  let api: HttpClient;
  let id: string;

  before(async () => {
    t = await startTestApi();
    await t.provision({ projectId: 'shop', name: 'master' });
    await t.ctx.pool.query(
      'CREATE TABLE shop_master.orders (id int PRIMARY KEY, total numeric, status text, at timestamptz, flag boolean, data jsonb)',
    );
    api = new HttpClient(t.url, {
      authorization: `Bearer ${await t.managementToken('shop')}`,
      'x-project-id': 'shop',
      environment: 'master',
      'content-type': 'application/json',
    });
    const res = await api.post('/api/rest/_webhooks', body('null'));
    expect(res.status, res.text).to.equal(201);
    id = res.body.webhook.id;
  });
  after(() => t?.close());

  function body(filterText: string): Record<string, unknown> {
    return JSON.parse(
      `{"projectId":"shop","environment":"master","table":"orders","events":["INSERT","UPDATE"],"url":"${PUBLIC_URL}","secret":"junk-secret-0123456789","filter":${filterText}}`,
    ) as Record<string, unknown>;
  }

  it('answers each with 400 VALIDATION_ERROR at a place in the filter, or accepts what reads cleanly; never a 5xx', async () => {
    const texts = fc.sample(junkText, { numRuns: 500, seed: 39 });
    let refused = 0;
    for (const [i, text] of texts.entries()) {
      const raw = i % 2 === 0 ? JSON.stringify(body('null')).replace('"filter":null', `"filter":${text}`) : `{"filter":${text}}`;
      const path = i % 2 === 0 ? '/api/rest/_webhooks' : `/api/rest/_webhooks/${id}`;
      const started = Date.now();
      const res = await api.request(i % 2 === 0 ? 'POST' : 'PATCH', path, { raw });
      const where = `${text.slice(0, 300)} → ${res.status} ${res.text.slice(0, 300)}`;
      expect(Date.now() - started, where).to.be.below(2000);
      expect(res.status, where).to.be.oneOf([400, 201, 200]);
      const parsed: unknown = JSON.parse(text);
      if (res.status === 400) {
        refused++;
        expect(res.body.error, where).to.equal('VALIDATION_ERROR');
        expect(res.body.violations, where).to.be.an('array').that.is.not.empty;
        for (const v of res.body.violations as Array<{ path: string }>) expect(v.path, where).to.match(/^filter(\.|$)/);
        if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) {
          // Refused for a reason the language names (or the request's own depth bound).
          const nested = /nested more than/.test(res.text);
          expect(nested || parseFilter(parsed, KINDS).issues.length > 0, where).to.equal(true);
        }
      } else {
        // Accepted: no filter (null), or one the language reads without a refusal; saved as sent.
        if (parsed !== null) expect(parseFilter(parsed, KINDS).issues, where).to.deep.equal([]);
        expect(res.body.webhook.filter, where).to.deep.equal(parsed);
      }
    }
    // Junk, mostly: the few accepted are junk that means something ({} or {"id": 1}).
    expect(refused, 'refused').to.be.above(400);
  });
});
