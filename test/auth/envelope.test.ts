import { expect } from 'chai';
import type { TestApi } from '../support/api.js';
import { startTestApi } from '../support/api.js';
import { HttpClient } from '../support/http.js';
import { PASSWORD, startAuthApi, uniqueEmail } from './support.js';

// Every failure is the documented envelope with the right status: never a 500, never a hang.

const POSTS = [
  '/auth/signup',
  '/auth/confirm-signup',
  '/auth/login',
  '/auth/recover-password',
  '/auth/reset-password',
  '/auth/refresh-token',
];

describe('auth: bad requests get the error envelope', () => {
  let t: TestApi;
  let http: HttpClient;
  before(async () => {
    t = await startAuthApi();
    ({ http } = await t.provision({ projectId: 'shop', name: 'master' }));
  });
  after(() => t.close());

  const expectEnvelope = (res: { status: number; body: any }, status: number, code: string) => {
    expect(res.status, JSON.stringify(res.body)).to.equal(status);
    expect(res.body.error).to.equal(code);
    expect(res.body.message).to.be.a('string');
  };

  for (const path of POSTS) {
    describe(`POST ${path}`, () => {
      it('malformed JSON → 400 VALIDATION_ERROR', async () => {
        const res = await http.post(path, undefined, { raw: '{"email": ', headers: { 'content-type': 'application/json' } });
        expectEnvelope(res, 400, 'VALIDATION_ERROR');
        expect(res.body.violations).to.be.an('array').that.is.not.empty;
      });
      it('missing fields and wrong types → 400 with a violation per field', async () => {
        const missing = await http.post(path, {});
        expectEnvelope(missing, 400, 'VALIDATION_ERROR');
        expect(missing.body.violations.length).to.be.at.least(1);
        const wrongTypes = await http.post(path, { email: 42, password: ['x'], code: {}, newPassword: true, refreshToken: 7 });
        expectEnvelope(wrongTypes, 400, 'VALIDATION_ERROR');
        const array = await http.post(path, [1, 2]);
        expectEnvelope(array, 400, 'VALIDATION_ERROR');
      });
      it('a 1 MB body → 413 PAYLOAD_TOO_LARGE', async () => {
        const res = await http.post(path, { email: 'a@b.co', padding: 'x'.repeat(1024 * 1024) });
        expectEnvelope(res, 413, 'PAYLOAD_TOO_LARGE');
      });
      it('a body that is not JSON → 415', async () => {
        const res = await http.post(path, undefined, {
          raw: 'email=a@b.co',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
        });
        expectEnvelope(res, 415, 'UNSUPPORTED_MEDIA_TYPE');
      });
      it('a body that does not decompress (gzip, deflate, br) → 400 VALIDATION_ERROR', async () => {
        for (const encoding of ['gzip', 'deflate', 'br']) {
          const res = await http.post(path, undefined, {
            raw: 'not compressed',
            headers: { 'content-type': 'application/json', 'content-encoding': encoding },
          });
          expectEnvelope(res, 400, 'VALIDATION_ERROR');
        }
      });
      it('no X-Project-Id → 400 naming the header', async () => {
        const res = await new HttpClient(t.url).post(path, { email: 'a@b.co' });
        expectEnvelope(res, 400, 'VALIDATION_ERROR');
        expect(res.body.violations[0].path).to.equal('x-project-id');
      });
    });
  }

  it('a NUL character in any string is a violation where it is, not a database error', async () => {
    const email = uniqueEmail('nul');
    const signup = await http.post('/auth/signup', { email, password: PASSWORD, name: 'Ada\u0000Lovelace' });
    expectEnvelope(signup, 400, 'VALIDATION_ERROR');
    expect(signup.body.violations.map((v: { path: string }) => v.path)).to.deep.equal(['name']);
    expect((await t.ctx.pool.query('SELECT 1 FROM walgate.users WHERE email = $1', [email])).rowCount).to.equal(0);
    for (const [path, body] of [
      ['/auth/login', { email, password: 'pass\u0000word' }],
      ['/auth/refresh-token', { refreshToken: 'a\u0000b' }],
      ['/auth/confirm-signup', { email, code: '12345\u0000' }],
    ] as const) {
      expectEnvelope(await http.post(path, body), 400, 'VALIDATION_ERROR');
    }
  });

  it('an invalid e-mail is a violation on `email`', async () => {
    const res = await http.post('/auth/signup', { email: 'not-an-email', password: PASSWORD });
    expectEnvelope(res, 400, 'VALIDATION_ERROR');
    expect(res.body.violations.map((v: { path: string }) => v.path)).to.deep.equal(['email']);
  });

  it('unknown routes and methods are 404 and 405 in the envelope', async () => {
    expectEnvelope(await http.get('/auth/nope'), 404, 'NOT_FOUND');
    expectEnvelope(await http.get('/auth/login'), 405, 'METHOD_NOT_ALLOWED');
    expectEnvelope(await http.post('/auth/me', {}), 405, 'METHOD_NOT_ALLOWED');
  });

  it('echoes a request id, or makes one', async () => {
    const given = await http.get('/auth/.well-known/jwks.json', { headers: { 'x-request-id': 'trace-123' } });
    expect(given.headers.get('x-request-id')).to.equal('trace-123');
    const made = await http.get('/auth/.well-known/jwks.json');
    expect(made.headers.get('x-request-id')).to.match(/^[0-9a-f-]{36}$/);
  });
});

describe('auth: rate limits (the seed defaults)', () => {
  let t: TestApi;
  let http: HttpClient;
  before(async () => {
    t = await startTestApi();
    ({ http } = await t.provision({ projectId: 'shop', name: 'master' }));
  });
  after(() => t.close());

  const expectLimited = (res: { status: number; body: any; headers: Headers }) => {
    expect(res.status).to.equal(429);
    expect(res.body.error).to.equal('RATE_LIMIT_EXCEEDED');
    const retryAfter = Number(res.headers.get('retry-after'));
    expect(retryAfter).to.be.within(1, 60);
    expect(res.body.retryAfter).to.equal(retryAfter);
  };

  it('signup: 10 per minute per IP', async () => {
    const results = [];
    for (let i = 0; i < 11; i++) results.push(await http.post('/auth/signup', { email: uniqueEmail('rl'), password: 'short' }));
    expect(results.slice(0, 10).every((r) => r.status === 400)).to.equal(true);
    expectLimited(results[10]!);
  });

  it('login: 20 per minute per IP', async () => {
    const results = [];
    for (let i = 0; i < 21; i++) results.push(await http.post('/auth/login', { email: uniqueEmail('rl'), password: PASSWORD }));
    expect(results.slice(0, 20).every((r) => r.status === 401)).to.equal(true);
    expectLimited(results[20]!);
  });

  it('recover-password: 5 per minute per e-mail, another e-mail unaffected', async () => {
    const email = uniqueEmail('rl');
    const results = [];
    for (let i = 0; i < 6; i++) results.push(await http.post('/auth/recover-password', { email }));
    expect(results.slice(0, 5).every((r) => r.status === 200)).to.equal(true);
    expectLimited(results[5]!);
    expect((await http.post('/auth/recover-password', { email: uniqueEmail('other') })).status).to.equal(200);
  });
});
