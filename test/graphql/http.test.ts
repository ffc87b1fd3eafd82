import { readFile } from 'node:fs/promises';
import { expect } from 'chai';
import { printSchema } from 'graphql';
import { serverAudits } from 'graphql-http';
import { authSchema } from '../../src/graphql/schema.js';
import { startTestApi, type TestApi } from '../support/api.js';
import type { HttpClient } from '../support/http.js';
import { PASSWORD, startAuthApi, uniqueEmail } from '../auth/support.js';
import { graphqlCall, rest } from './transports.js';

const GRAPHQL_RESPONSE = 'application/graphql-response+json';

// POST/GET /graphql as a client sees it: the GraphQL-over-HTTP conformance audits of graphql-http,
// the limits on what a document may ask, introspection, and the rate limits shared with REST.

describe('graphql: GraphQL over HTTP (graphql-http server audits)', function () {
  let t: TestApi;
  before(async () => {
    t = await startAuthApi();
  });
  after(() => t?.close());

  // Built when mocha reads the file; the url is asked for when each audit runs.
  for (const audit of serverAudits({ url: () => `${t.url}/graphql` })) {
    it(`${audit.id} ${audit.name}`, async () => {
      const result = await audit.fn();
      expect(result.status, 'reason' in result ? result.reason : '').to.equal('ok');
    });
  }
});

describe('graphql: limits, introspection, transport details', function () {
  let t: TestApi;
  let http: HttpClient;
  before(async () => {
    t = await startAuthApi({ env: { GRAPHQL_MAX_DEPTH: '4', GRAPHQL_MAX_COST: '30', GRAPHQL_MAX_DOCUMENT_BYTES: '2048' } });
    // The specification's own media type: a document that cannot run is a 400 (with
    // application/json it is a 200 carrying the same errors).
    http = (await t.provision({ projectId: 'shop', name: 'master' })).http.with({ accept: GRAPHQL_RESPONSE });
  });
  after(() => t?.close());

  it('a query may come by GET; a mutation by GET is refused with 405', async () => {
    const got = await http.get(`/graphql?query=${encodeURIComponent('{ jwks { keys { kid } } }')}`);
    expect(got.status).to.equal(200);
    expect(got.body.data.jwks.keys).to.have.length(2);
    const mutation = await http.get(`/graphql?query=${encodeURIComponent('mutation { logout { message } }')}`);
    expect(mutation.status).to.equal(405);
    expect(mutation.headers.get('allow')).to.match(/POST/);
  });

  it('refuses an operation nested deeper than GRAPHQL_MAX_DEPTH, before running it', async () => {
    const deep = await graphqlCall(http, 'me', '{ me { user { id } } ... on Query { me { session { id } } } }');
    expect(deep.code).to.equal('AUTH_TOKEN_INVALID'); // depth 3: runs (and needs a token)
    const tooDeep = await http.post('/graphql', { query: 'query { me { user { id } } } fragment F on Me { user { id } }' });
    expect(tooDeep.status).to.equal(400); // an unused fragment: a validation error, not a run
    const nested = await http.post('/graphql', { query: '{ __schema { types { fields { type { ofType { name } } } } } }' });
    expect(nested.status).to.equal(400);
    expect(nested.body.errors[0].message).to.match(/levels deep; at most 4/);
    expect(nested.body.errors[0].extensions.code).to.equal('VALIDATION_ERROR');
  });

  it('refuses an operation selecting more than GRAPHQL_MAX_COST fields (aliases count each time)', async () => {
    const aliases = Array.from({ length: 40 }, (_, i) => `k${i}: jwks { keys { kid } }`).join(' ');
    const res = await http.post('/graphql', { query: `{ ${aliases} }` });
    expect(res.status).to.equal(400);
    expect(res.body.errors[0].message).to.match(/selects more than 30 fields; at most 30/);
    expect(res.body).to.not.have.property('data');
  });

  it('refuses a document over GRAPHQL_MAX_DOCUMENT_BYTES', async () => {
    const res = await http.post('/graphql', { query: `{ jwks { keys { kid } } } # ${'x'.repeat(3000)}` });
    expect(res.status).to.equal(400);
    expect(res.body.errors[0].extensions.code).to.equal('PAYLOAD_TOO_LARGE');
  });

  it('answers syntax errors and unknown fields with VALIDATION_ERROR, never a stack', async () => {
    for (const query of ['{ me { ', '{ nope }', 'mutation { login(input: { email: 1 }) { accessToken } }']) {
      const res = await http.post('/graphql', { query });
      expect(res.status, query).to.equal(400);
      expect(res.body.errors[0].extensions.code, query).to.equal('VALIDATION_ERROR');
      expect(JSON.stringify(res.body), query).to.not.match(/\bat \S+:\d+/);
    }
  });

  it('a NUL character in a string argument is VALIDATION_ERROR, not a database error', async () => {
    // In the document (an escape the GraphQL parser turns into U+0000) and in the variables.
    const literal = await http.post('/graphql', {
      query: `mutation { signup(input: { email: "${uniqueEmail('nul')}", password: "${PASSWORD}", name: "Ada\\u0000Lovelace" }) { userId } }`,
    });
    const variable = await http.post('/graphql', {
      query: 'mutation($input: SignupInput!) { signup(input: $input) { userId } }',
      variables: { input: { email: uniqueEmail('nul'), password: PASSWORD, name: 'Ada\u0000Lovelace' } },
    });
    for (const res of [literal, variable]) {
      expect(res.body.errors?.[0]?.extensions?.code, JSON.stringify(res.body)).to.equal('VALIDATION_ERROR');
      expect(res.status).to.be.below(500);
    }
    expect((await t.ctx.pool.query(`SELECT 1 FROM walgate.users WHERE email LIKE 'nul.%'`)).rowCount).to.equal(0);
  });

  it('introspection is on outside production', async () => {
    const res = await http.post('/graphql', { query: '{ __schema { queryType { name } } }' });
    expect(res.status).to.equal(200);
    expect(res.body.data.__schema.queryType.name).to.equal('Query');
  });
});

describe('graphql: introspection switched off', function () {
  let t: TestApi;
  before(async () => {
    t = await startAuthApi({ env: { GRAPHQL_INTROSPECTION: 'false' } });
  });
  after(() => t?.close());

  it('GRAPHQL_INTROSPECTION=false refuses __schema and __type, and still runs operations', async () => {
    const http = (await t.provision({ projectId: 'shop', name: 'master' })).http.with({ accept: GRAPHQL_RESPONSE });
    for (const query of ['{ __schema { queryType { name } } }', '{ __type(name: "Query") { name } }']) {
      const res = await http.post('/graphql', { query });
      expect(res.status, query).to.equal(400);
      expect(res.body.errors[0].message, query).to.match(/introspection/i);
    }
    expect((await graphqlCall(http, 'jwks', '{ jwks { keys { kid } } }')).code).to.equal(null);
  });
});

describe('graphql: rate limits are shared with REST', function () {
  let t: TestApi;
  before(async () => {
    t = await startTestApi(); // the seed's limits
  });
  after(() => t?.close());

  it('20 logins per minute per IP across both transports: the 21st is RATE_LIMIT_EXCEEDED with retryAfter', async () => {
    const { http } = await t.provision({ projectId: 'shop', name: 'master' });
    const login = (i: number) =>
      i % 2 === 0
        ? rest.login(http, { email: uniqueEmail('rl'), password: PASSWORD })
        : graphqlCall(http, 'login', 'mutation($input: LoginInput!) { login(input: $input) { accessToken } }', {
            input: { email: uniqueEmail('rl'), password: PASSWORD },
          });
    const codes = [];
    for (let i = 0; i < 20; i++) codes.push((await login(i)).code);
    expect(codes.every((c) => c === 'AUTH_INVALID_CREDENTIALS')).to.equal(true);
    for (const via of [0, 1]) {
      const limited = await login(via);
      expect(limited.code).to.equal('RATE_LIMIT_EXCEEDED');
      expect(limited.details.retryAfter).to.be.within(1, 60);
    }
  });
});

describe('graphql: docs/graphql.md shows the schema the server serves', () => {
  it('the SDL block of docs/graphql.md equals printSchema', async () => {
    const section = await readFile(new URL('../../../docs/graphql.md', import.meta.url), 'utf8');
    const block = /```graphql\n([\s\S]*?)```/.exec(section)?.[1];
    expect(block, 'a ```graphql block in the section').to.be.a('string');
    expect(block!.trim()).to.equal(printSchema(authSchema()).trim());
  });
});
