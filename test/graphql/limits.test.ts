import { expect } from 'chai';
import type { TestApi } from '../support/api.js';
import type { HttpClient } from '../support/http.js';
import { startAuthApi } from '../auth/support.js';

// No GraphQL document within GRAPHQL_MAX_DOCUMENT_BYTES keeps the api busy: the size limits are
// measured in time linear in the document and run before graphql's own rules, whose overlap check
// is quadratic. The bounds are CPU time of this process (api and client), generous on purpose:
// measured before the fix, the fragment document cost 6.4 s (22 levels) and the overlap document
// 0.3–0.7 s; after, both a few milliseconds.

const CPU_BOUND_MS = 250;

/** A document under 1 KB whose fragments each spread the next twice: 2^levels fields when expanded. */
function doublingFragments(levels: number): string {
  let doc = 'query { ...F0 }';
  for (let i = 0; i < levels; i++) doc += ` fragment F${i} on Query { ...F${i + 1} ...F${i + 1} }`;
  return `${doc} fragment F${levels} on Query { jwks { keys { kid } } }`;
}

async function cpuMs<T>(fn: () => Promise<T>): Promise<{ result: T; ms: number }> {
  const start = process.cpuUsage();
  const result = await fn();
  const used = process.cpuUsage(start);
  return { result, ms: (used.user + used.system) / 1000 };
}

describe('graphql: no document stalls the api', function () {
  let t: TestApi;
  let http: HttpClient;
  before(async () => {
    t = await startAuthApi(); // the default limits: 8 levels, 100 fields, 8192 bytes
    http = (await t.provision({ projectId: 'shop', name: 'master' })).http;
    await http.get(`/graphql?query=${encodeURIComponent('{ jwks { keys { kid } } }')}`); // warm
  });
  after(() => t?.close());

  it('22 levels of fragments spread twice, by GET without a login: refused at once', async () => {
    const query = doublingFragments(22);
    expect(Buffer.byteLength(query)).to.be.below(1024);
    const { result: res, ms } = await cpuMs(() => http.get(`/graphql?query=${encodeURIComponent(query)}`));
    expect(ms, 'CPU ms').to.be.below(CPU_BOUND_MS);
    expect(res.body.errors, JSON.stringify(res.body)).to.have.length(1);
    expect(res.body.errors[0].message).to.match(/selects more than 100 fields/);
    expect(res.body.errors[0].extensions.code).to.equal('VALIDATION_ERROR');
  });

  it('a fragment cycle is refused by graphql and does not loop here', async () => {
    const query = '{ ...A } fragment A on Query { jwks { keys { kid } } ...B } fragment B on Query { ...A }';
    const { result: res, ms } = await cpuMs(() => http.post('/graphql', { query }));
    expect(ms, 'CPU ms').to.be.below(CPU_BOUND_MS);
    expect(res.body.errors.map((e: { message: string }) => e.message).join('\n')).to.match(/Cannot spread fragment "A" within itself/);
  });

  it("8 KB of one field repeated: graphql's quadratic overlap check never runs on it", async () => {
    const query = `{${'me{user{id}}'.repeat(680)}}`;
    expect(Buffer.byteLength(query)).to.be.within(8000, 8192);
    const { result: res, ms } = await cpuMs(() => http.post('/graphql', { query }));
    expect(ms, 'CPU ms').to.be.below(CPU_BOUND_MS);
    // Only the size limit answers; graphql's overlap check would have spent its budget and added
    // "Validation aborted.".
    expect(res.body.errors.map((e: { message: string }) => e.message)).to.deep.equal([
      'The operation selects more than 100 fields; at most 100 are allowed.',
    ]);
  });

  it('a fragment no operation uses is bounded too (graphql walks it all the same)', async () => {
    const query = `{ jwks { keys { kid } } } fragment Heavy on Query {${'me{user{id}}'.repeat(660)}}`;
    expect(Buffer.byteLength(query)).to.be.below(8192);
    const { result: res, ms } = await cpuMs(() => http.post('/graphql', { query }));
    expect(ms, 'CPU ms').to.be.below(CPU_BOUND_MS);
    expect(res.body.errors.map((e: { message: string }) => e.message)).to.deep.equal([
      'The fragment Heavy selects more than 100 fields; at most 100 are allowed.',
    ]);
  });

  it('a document within the limits still runs', async () => {
    const query = `{ ...A ...A } fragment A on Query { ${Array.from({ length: 15 }, (_, i) => `k${i}: jwks { keys { kid } }`).join(' ')} }`;
    const res = await http.post('/graphql', { query });
    expect(res.body.errors, JSON.stringify(res.body.errors)).to.equal(undefined);
    expect(res.body.data.k14.keys).to.have.length(2);
  });
});
