import { randomInt } from 'node:crypto';
import { expect } from 'chai';
import type { TestApi } from '../support/api.js';
import type { HttpClient, HttpResponse } from '../support/http.js';
import type { Mail, Mailer } from '../../src/core/mail/mailer.js';
import { cpuMsOf, PASSWORD, randomPassword, startAuthApi, uniqueEmail } from './support.js';

// The abuse suite (issue 12): for every public auth endpoint and GraphQL operation, worst-case
// input within the body limit (100 KB) and the document limit (8 KB) — the longest fields, any
// code points, the deepest nesting, the most aliases — is answered without a 5xx and within
// 250 ms of CPU (every thread of the process: the api runs in it). Limits are generous here, so
// the work behind them really runs.

const CPU_BOUND_MS = 250;

/** `n` code points drawn from all of Unicode, lone surrogates and astral ones included. */
function anyCodePoints(n: number): string {
  let s = '';
  for (let i = 0; i < n; i++) {
    const kind = randomInt(4);
    if (kind === 0) s += String.fromCodePoint(randomInt(0x10000, 0x110000));
    else if (kind === 1)
      s += String.fromCharCode(randomInt(0xd800, 0xe000)); // a lone surrogate
    else s += String.fromCharCode(randomInt(0x20, 0xd800));
  }
  return s;
}

/** Strings that fill the body limit (about 90 KB once encoded). */
const HUGE = () => anyCodePoints(22_000);
const LONGEST_EMAIL = `${'a'.repeat(64)}@${'b'.repeat(60)}.${'c'.repeat(60)}.${'d'.repeat(60)}.com`; // 254 characters
const PASSWORDS = [
  randomPassword(4096), // the longest the schema takes
  randomPassword(256), // the longest the policy takes, all symbols and digits
  '@4!1|0$5'.repeat(32), // l33t characters only
  '1234567890'.repeat(25) + '123456',
  'passwordpassword'.repeat(16),
  anyCodePoints(256),
];

describe('auth: the abuse suite (worst-case input is answered within 250 ms of CPU)', function () {
  this.timeout(300_000);
  let t: TestApi;
  let http: HttpClient;
  let account: { email: string; accessToken: string };
  const worst: Record<string, number> = {};
  // Mail is kept in memory: the test's SMTP server would parse each message in this process, and
  // its CPU is not the api's. (E-mail leaves after the answer anyway; mail-queue.test.ts tests SMTP.)
  const mails: Mail[] = [];
  const memoryMailer: Mailer = { destination: 'memory', send: async (m) => void mails.push(m), close: () => undefined };
  const codeFor = async (email: string, after: number) => {
    for (let i = 0; i < 200 && mails.filter((m) => m.to === email).length <= after; i++) await new Promise((r) => setTimeout(r, 10));
    return /\b(\d{6})\b/.exec(mails.filter((m) => m.to === email)[after]!.subject)![1]!;
  };

  before(async () => {
    t = await startAuthApi({ overrides: { mailer: memoryMailer } });
    ({ http } = await t.provision({ projectId: 'abuse', name: 'master', lockoutThreshold: 1_000_000 }));
    const email = uniqueEmail('victim');
    expect((await http.post('/auth/signup', { email, password: PASSWORD })).status).to.equal(201);
    const confirmed = await http.post('/auth/confirm-signup', { email, code: await codeFor(email, 0) });
    account = { email, accessToken: confirmed.body.accessToken };
    await http.post('/graphql', { query: '{ jwks { keys { kid } } }' }); // the first GraphQL request warms the engine up
  });
  after(async () => {
    console.log(
      `      worst CPU per operation (ms): ${JSON.stringify(Object.fromEntries(Object.entries(worst).map(([k, v]) => [k, Math.round(v)])))}`,
    );
    await t.close();
  });

  async function expectBounded(name: string, request: () => Promise<HttpResponse>): Promise<HttpResponse> {
    const { result, cpuMs } = await cpuMsOf(request);
    expect(result.status, `${name}: ${result.text.slice(0, 200)}`).to.be.below(500);
    expect(cpuMs, `${name}: CPU ms`).to.be.below(CPU_BOUND_MS);
    worst[name] = Math.max(worst[name] ?? 0, cpuMs);
    return result;
  }

  /** Raw JSON bodies for an operation whose fields are `fields`: each the longest, any code points, wrong types, deep. */
  function hostileBodies(fields: Record<string, () => string>): string[] {
    const names = Object.keys(fields);
    const sensible = () => Object.fromEntries(names.map((n) => [n, fields[n]!()]));
    const bodies: string[] = [];
    bodies.push(JSON.stringify(sensible())); // sensible-looking, at the longest
    for (const n of names) bodies.push(JSON.stringify({ ...sensible(), [n]: HUGE() })); // one field fills the body
    bodies.push(JSON.stringify(Object.fromEntries(names.map((n) => [n, anyCodePoints(300)]))));
    // The deepest nesting the body limit allows, in the first field.
    const depth = 45_000;
    bodies.push(`${JSON.stringify(sensible()).slice(0, -1)},"${names[0]}":${'['.repeat(depth)}1${']'.repeat(depth)}}`);
    bodies.push(JSON.stringify(Object.fromEntries(Array.from({ length: 6000 }, (_, i) => [`k${i}`, i])))); // the most keys
    return bodies;
  }

  describe('REST', () => {
    const cases: Array<[string, Record<string, () => string>]> = [
      [
        '/auth/signup',
        { email: () => uniqueEmail('abuse'), password: () => PASSWORDS[randomInt(PASSWORDS.length)]!, name: () => anyCodePoints(200) },
      ],
      ['/auth/confirm-signup', { email: () => account.email, code: () => anyCodePoints(64) }],
      ['/auth/login', { email: () => account.email, password: () => PASSWORDS[randomInt(PASSWORDS.length)]! }],
      ['/auth/recover-password', { email: () => LONGEST_EMAIL }],
      [
        '/auth/reset-password',
        { email: () => account.email, code: () => '123456', newPassword: () => PASSWORDS[randomInt(PASSWORDS.length)]! },
      ],
      ['/auth/refresh-token', { refreshToken: () => anyCodePoints(512) }],
    ];
    for (const [path, fields] of cases) {
      it(`POST ${path}`, async () => {
        for (const raw of hostileBodies(fields)) {
          await expectBounded(path, () => http.request('POST', path, { raw, headers: { 'content-type': 'application/json' } }));
        }
      });
    }

    it('every password kind through signup and a right-code reset-password', async () => {
      for (const password of PASSWORDS) {
        await expectBounded('/auth/signup', () => http.post('/auth/signup', { email: uniqueEmail('pw'), password }));
      }
      let seen = mails.filter((m) => m.to === account.email).length;
      for (const newPassword of PASSWORDS) {
        await http.post('/auth/recover-password', { email: account.email });
        const code = await codeFor(account.email, seen++);
        await expectBounded('/auth/reset-password', () => http.post('/auth/reset-password', { email: account.email, code, newPassword }));
      }
    });

    it('GET /auth/me, POST /auth/logout and the key set with hostile headers and queries', async () => {
      // Header values are bytes: the longest a Node server takes (16 KB of headers), in printable ASCII.
      const printable = () => Array.from({ length: 15_000 }, () => String.fromCharCode(randomInt(0x21, 0x7f))).join('');
      const tokens = [
        printable(),
        'a.b.c'.repeat(3000),
        `${'e'.repeat(7000)}.${'e'.repeat(7000)}.${'e'.repeat(100)}`,
        '.'.repeat(15_000),
        account.accessToken.repeat(30).slice(0, 15_000),
      ];
      for (const token of tokens) {
        await expectBounded('/auth/me', () => http.get('/auth/me', { headers: { authorization: `Bearer ${token}` } }));
        await expectBounded('/auth/logout', () => http.post('/auth/logout', undefined, { headers: { authorization: `Bearer ${token}` } }));
      }
      await expectBounded('/auth/.well-known/jwks.json', () =>
        http.get(
          `/auth/.well-known/jwks.json?projectId=${encodeURIComponent(Buffer.from(anyCodePoints(2000)).toString())}&environment=${'e'.repeat(4000)}`,
        ),
      );
    });
  });

  describe('GraphQL', () => {
    const INPUTS: Record<string, [type: string, selection: string, input: () => Record<string, string>]> = {
      signup: ['SignupInput', 'userId', () => ({ email: uniqueEmail('gql'), password: randomPassword(4096), name: anyCodePoints(200) })],
      confirmSignup: ['ConfirmSignupInput', 'accessToken', () => ({ email: account.email, code: anyCodePoints(64) })],
      login: ['LoginInput', 'accessToken', () => ({ email: account.email, password: randomPassword(4096) })],
      recoverPassword: ['RecoverPasswordInput', 'message', () => ({ email: LONGEST_EMAIL })],
      resetPassword: ['ResetPasswordInput', 'message', () => ({ email: account.email, code: '123456', newPassword: randomPassword(256) })],
      refreshToken: ['RefreshTokenInput', 'accessToken', () => ({ refreshToken: anyCodePoints(512) })],
    };
    const post = (query: string, variables?: unknown) => () => http.post('/graphql', { query, variables });

    for (const [field, [type, selection, input]] of Object.entries(INPUTS)) {
      it(`mutation ${field}: the most aliases, the longest inputs, any code points`, async () => {
        // Cost: 2 per alias (the field and one selection); 50 is the default GRAPHQL_MAX_COST of 100.
        const aliases = Array.from({ length: 50 }, (_, i) => `a${i}: ${field}(input: $i) { ${selection} }`).join(' ');
        await expectBounded(`graphql ${field}`, post(`mutation($i: ${type}!) { ${aliases} }`, { i: input() }));
        const huge = Object.fromEntries(Object.keys(input()).map((k) => [k, anyCodePoints(8000)]));
        await expectBounded(`graphql ${field}`, post(`mutation($i: ${type}!) { ${aliases} }`, { i: huge }));
        // One too many aliases: refused before anything runs.
        await expectBounded(
          `graphql ${field}`,
          post(`mutation($i: ${type}!) { ${aliases} z: ${field}(input: $i) { ${selection} } }`, { i: input() }),
        );
      });
    }

    it('queries me and jwks, and logout: the most aliases (each worked out once per request)', async () => {
      const me = Array.from({ length: 33 }, (_, i) => `a${i}: me { user { id } }`).join(' ');
      await expectBounded('graphql me', () =>
        http.post('/graphql', { query: `{ ${me} }` }, { headers: { authorization: `Bearer ${account.accessToken}` } }),
      );
      const jwks = Array.from({ length: 50 }, (_, i) => `a${i}: jwks { keys { kid } }`)
        .join(' ')
        .slice(0, 8000);
      await expectBounded('graphql jwks', post(`{ ${jwks.slice(0, jwks.lastIndexOf(' a'))} }`));
      const logout = Array.from({ length: 100 }, (_, i) => `a${i}: logout { message }`).join(' ');
      await expectBounded('graphql logout', post(`mutation { ${logout} }`));
    });

    it('the deepest nesting, a document of any code points, and a document at the size limit', async () => {
      await expectBounded('graphql nesting', post(`{ ${'me { user { '.repeat(600)}id${' }'.repeat(1200)} }`));
      await expectBounded('graphql nesting', post(`${'{'.repeat(8000)}`));
      await expectBounded('graphql code points', post(anyCodePoints(2700)));
      await expectBounded('graphql size', post(`{ ${'jwks { keys { kid } } '.repeat(400)} }`));
      await expectBounded('graphql size', post(`{ __typename ${' '.repeat(100_000)} }`));
    });

    // Before cost and depth were measured in time linear in the document, this one kept the event
    // loop busy for seconds (22 levels: 4.8 s).
    it('fragments that each spread the next twice', async () => {
      const levels = 22;
      const fragments = Array.from({ length: levels }, (_, i) => `fragment F${i} on Query { ...F${i + 1} ...F${i + 1} }`).join(' ');
      const query = `{ ...F0 } ${fragments} fragment F${levels} on Query { __typename }`;
      await expectBounded('graphql fragments', () => http.get(`/graphql?query=${encodeURIComponent(query)}`));
    });
  });
});
