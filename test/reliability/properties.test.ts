import { expect } from 'chai';
import fc from 'fast-check';
import { authApi } from '../../src/http/auth/operations.js';
import { providersApi } from '../../src/http/auth/providers/operations.js';
import { ERRORS } from '../../src/core/errors.js';
import type { OperationGroup } from '../../src/http/operation.js';
import { webhooksApi } from '../../src/http/webhooks/operations.js';
import type { TestApi } from '../support/api.js';
import { startAuthApi } from '../auth/support.js';

// Hostile input, generated: whatever the body, headers and query of any operation (and of
// /graphql), the answer is a documented status with the error envelope — never a 500, never a
// stack trace, never a hang.

const RUNS = Number(process.env.PROPERTY_RUNS ?? 60);

const headerValue = fc.oneof(
  fc.constantFrom(
    'shop',
    'master',
    'staging',
    '',
    ' ',
    'Bearer ',
    'Bearer a.b.c',
    "shop' OR 1=1 --",
    '../../etc/passwd',
    'ßéÿ',
    'x'.repeat(300),
  ),
  fc.string({ maxLength: 40 }).map((s) => s.replace(/[^\x20-\x7e]/g, '')),
);
const headers = fc.record(
  {
    'x-project-id': headerValue,
    environment: headerValue,
    authorization: headerValue,
    // The body is sent as plain JSON whatever this says: it must not decompress into a 500.
    'content-encoding': fc.constantFrom('gzip', 'deflate', 'br', 'identity', 'x-unknown'),
  },
  { requiredKeys: [] },
);
// Any code point, NUL included: Postgres text cannot hold U+0000, which must be a 400, not a 500.
const text = (maxLength = 40) =>
  fc.oneof(fc.string({ maxLength }), fc.string({ unit: 'binary', maxLength }), fc.constantFrom('\u0000', 'a\u0000b'));
// A path segment as sent: well-formed encodings of any text, and malformed or NUL-bearing ones.
const pathSegment = fc.oneof(
  text(20).map(encodeURIComponent),
  fc.constantFrom('%', '%E0%A4%A', '%ZZ', '%00', 'wh_%00', '..%2F..%2F', '%C0%AF'),
);
const query = fc.dictionary(
  fc.constantFrom('projectId', 'environment', 'limit', 'cursor', 'since', 'until', 'x', 'redirect_to', 'code_challenge', 'state', 'code'),
  fc.oneof(headerValue, text(20)),
  { maxKeys: 3 },
);
const body = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }),
  fc.record(
    {
      email: fc.oneof(fc.emailAddress(), text(), fc.integer()),
      password: fc.oneof(text(300), fc.constant(null)),
      newPassword: text(30),
      code: fc.oneof(fc.stringMatching(/^\d{6}$/), text()),
      refreshToken: text(),
      name: fc.oneof(text(), fc.integer()),
      table: fc.oneof(fc.constantFrom('orders', "o'; DROP TABLE x --", 'a.b', '"q"', 'ord\u0000ers'), text()),
      events: fc.array(fc.oneof(fc.constantFrom('INSERT', 'UPDATE', 'DELETE'), text()), { maxLength: 4 }),
      url: fc.oneof(
        fc.webUrl(),
        fc.constantFrom('https://127.0.0.1/h', 'https://[::1]/h', 'https://2130706433/', 'javascript:alert(1)'),
        text(),
      ),
      secret: text(80),
      filter: fc.oneof(
        fc.jsonValue({ maxDepth: 2 }),
        fc.dictionary(text(10), fc.oneof(text(10), fc.integer(), fc.boolean()), { maxKeys: 3 }),
      ),
      select: fc.array(text(), { maxLength: 3 }),
      active: fc.jsonValue({ maxDepth: 0 }),
    },
    { requiredKeys: [] },
  ),
);

const KNOWN = new Set(Object.keys(ERRORS));

function expectEnvelope(res: Response, text: string, what: string): void {
  expect(res.status, `${what} → ${res.status} ${text.slice(0, 300)}`).to.be.below(500);
  expect(text, what).to.not.match(/\bat [\w.<>]+ \(|node:internal|\.ts:\d+|\.js:\d+/);
  if (res.status >= 400) {
    const parsed = JSON.parse(text) as { error?: string; message?: string };
    expect(KNOWN.has(parsed.error ?? ''), `${what}: ${text.slice(0, 200)}`).to.equal(true);
    expect(parsed.message, what).to.be.a('string');
  }
}

describe('reliability: generated hostile requests always get the envelope', function () {
  this.timeout(120_000);
  let t: TestApi;
  let token: string;
  before(async () => {
    t = await startAuthApi();
    await t.provision({ projectId: 'shop', name: 'master' });
    await t.ctx.pool.query('CREATE TABLE shop_master.orders (id int PRIMARY KEY, status text)');
    token = await t.managementToken('shop');
  });
  after(() => t?.close());

  const groups: OperationGroup[] = [authApi, providersApi, webhooksApi];
  for (const group of groups) {
    for (const [name, op] of Object.entries(group.operations)) {
      it(`${group.tag}: ${name} (${op.method.toUpperCase()} ${group.mount}${op.path})`, async () => {
        await fc.assert(
          fc.asyncProperty(headers, query, body, fc.boolean(), pathSegment, async (h, q, b, realToken, id) => {
            const path = `${group.mount}${op.path}`.replace(':id', id || 'wh_x').replace(/\/$/, '');
            const url = `${t.url}${path}?${new URLSearchParams(q)}`;
            const sent: Record<string, string> = { ...h, 'content-type': 'application/json' };
            if (realToken && group === webhooksApi) sent.authorization = `Bearer ${token}`;
            const res = await fetch(url, {
              method: op.method.toUpperCase(),
              headers: sent,
              body: op.method === 'get' ? undefined : JSON.stringify(b),
              signal: AbortSignal.timeout(10_000),
            });
            expectEnvelope(res, await res.text(), `${op.method} ${path}`);
          }),
          { numRuns: RUNS },
        );
      });
    }
  }

  it('graphql: any document and variables', async () => {
    const document = fc.oneof(
      fc.string({ maxLength: 200 }),
      fc.constantFrom(
        '{ me { user { id } } }',
        'mutation($i: LoginInput!) { login(input: $i) { accessToken } }',
        'mutation($i: SignupInput!) { signup(input: $i) { userId } }',
        '{ jwks { keys { kid } } }',
        '{ __schema { types { name } } }',
      ),
      // String literals with escapes the parser decodes, U+0000 among them.
      fc
        .constantFrom('\\u0000', 'a\\u0000b', '\\uD800', 'x')
        .map(
          (s) =>
            `mutation { signup(input: { email: "nul.${s.length}@example.com", password: "correct horse battery staple 42", name: "${s}" }) { userId } }`,
        ),
    );
    const variables = fc.oneof(
      fc.jsonValue({ maxDepth: 3 }),
      fc.record({ email: fc.oneof(fc.emailAddress(), text()), password: text(60), name: text() }, { requiredKeys: [] }),
    );
    await fc.assert(
      fc.asyncProperty(headers, document, variables, async (h, q, variables) => {
        const res = await fetch(`${t.url}/graphql`, {
          method: 'POST',
          headers: { ...h, 'content-type': 'application/json', accept: 'application/graphql-response+json' },
          body: JSON.stringify({ query: q, variables: { i: variables } }),
          signal: AbortSignal.timeout(10_000),
        });
        const text = await res.text();
        expect(res.status, text.slice(0, 300)).to.be.below(500);
        expect(text).to.not.match(/\bat [\w.<>]+ \(|node:internal|\.ts:\d+|\.js:\d+/);
        for (const e of (JSON.parse(text) as { errors?: Array<{ extensions?: { code?: string } }> }).errors ?? []) {
          expect(KNOWN.has(e.extensions?.code ?? ''), text.slice(0, 300)).to.equal(true);
        }
      }),
      { numRuns: RUNS * 2 },
    );
  });
});
