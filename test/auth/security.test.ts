import { createHmac } from 'node:crypto';
import { expect } from 'chai';
import { CompactEncrypt, SignJWT, UnsecuredJWT, base64url, generateKeyPair } from 'jose';
import { KeyRing } from '../../src/auth/keyring.js';
import { findEnvironment } from '../../src/projects/environments.js';
import type { TestApi } from '../support/api.js';
import type { HttpClient } from '../support/http.js';
import { codeIn } from '../support/smtp.js';
import { bearer, PASSWORD, signUpAndConfirm, startAuthApi, uniqueEmail, type Account } from './support.js';

const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');

describe('auth: hostile input, races and secrets at rest', function () {
  this.timeout(60_000);
  let t: TestApi;
  let http: HttpClient;
  let account: Account;

  before(async () => {
    t = await startAuthApi();
    ({ http } = await t.provision({ projectId: 'shop', name: 'master', lockoutThreshold: 1000 }));
    account = await signUpAndConfirm(t, http);
  });
  after(() => t.close());

  describe('hostile access tokens are 401', () => {
    const header = () => JSON.parse(Buffer.from(account.accessToken.split('.')[0]!, 'base64url').toString());
    const payload = () => JSON.parse(Buffer.from(account.accessToken.split('.')[1]!, 'base64url').toString());

    async function expectRejected(token: string, code = 'AUTH_TOKEN_INVALID') {
      const res = await http.get('/auth/me', bearer(token));
      expect(res.status, token.slice(0, 60)).to.equal(401);
      expect(res.body.error).to.equal(code);
    }

    it('the genuine token passes (so the rejections below mean something)', async () => {
      expect((await http.get('/auth/me', bearer(account.accessToken))).status).to.equal(200);
    });

    it('alg: none', async () => {
      await expectRejected(new UnsecuredJWT(payload()).encode());
      await expectRejected(`${b64({ alg: 'none', kid: header().kid })}.${b64(payload())}.`);
    });

    it('HS256 signed with the public key as the secret', async () => {
      const jwks = (await http.get('/auth/.well-known/jwks.json')).body.keys;
      const pub = JSON.stringify(jwks[0]);
      const input = `${b64({ alg: 'HS256', kid: header().kid, typ: 'JWT' })}.${b64(payload())}`;
      await expectRejected(`${input}.${createHmac('sha256', pub).update(input).digest('base64url')}`);
    });

    it('an unknown kid, a kid that tries paths or SQL, and key-carrying headers', async () => {
      const { privateKey, publicKey } = await generateKeyPair('ES256');
      const { exportJWK } = await import('jose');
      const sign = (h: Record<string, unknown>) =>
        new SignJWT(payload()).setProtectedHeader({ alg: 'ES256', typ: 'JWT', ...h }).sign(privateKey);
      await expectRejected(await sign({ kid: 'not-a-key' }));
      await expectRejected(await sign({ kid: "../../etc/passwd' OR '1'='1" }));
      await expectRejected(await sign({ kid: header().kid, jwk: await exportJWK(publicKey) }));
      await expectRejected(await sign({ kid: header().kid, jku: 'https://attacker.example/jwks.json' }));
      await expectRejected(await sign({ kid: header().kid, x5u: 'https://attacker.example/cert.pem' }));
    });

    it('signed with the genuine key, but for another audience or issuer, or without a session', async () => {
      const env = (await findEnvironment(t.ctx.pool, 'shop', 'master'))!;
      const { kid, alg, key } = await new KeyRing(t.ctx).signingKey(env);
      const sign = (claims: Record<string, unknown>) =>
        new SignJWT({ ...payload(), ...claims }).setProtectedHeader({ alg, kid, typ: 'JWT' }).sign(key);
      expect((await http.get('/auth/me', bearer(await sign({})))).status, 'the same claims pass').to.equal(200);
      await expectRejected(await sign({ aud: 'other' }));
      await expectRejected(await sign({ iss: 'https://attacker.example' }));
      await expectRejected(await sign({ env: 'staging' }));
      await expectRejected(await sign({ sid: undefined }));
    });

    it("another project's token", async () => {
      const { http: other } = await t.provision({ projectId: 'other', name: 'master' });
      const stranger = await signUpAndConfirm(t, other, account.email);
      await expectRejected(stranger.accessToken);
      expect((await other.get('/auth/me', bearer(account.accessToken))).status).to.equal(401);
    });

    it('a tampered payload, a truncated token, an oversized one', async () => {
      const [h, , s] = account.accessToken.split('.');
      await expectRejected(`${h}.${b64({ ...payload(), sub: '00000000-0000-0000-0000-000000000000' })}.${s}`);
      await expectRejected(account.accessToken.slice(0, -5));
      await expectRejected(account.accessToken.split('.').slice(0, 2).join('.'));
      await expectRejected(`${h}.${b64({ ...payload(), pad: 'x'.repeat(10_000) })}.${s}`);
      await expectRejected('....');
    });

    it('expired, and not yet valid', async () => {
      const jwt = (await import('jose')).decodeJwt(account.accessToken);
      const pastTolerance = jwt.exp! - jwt.iat! + 31; // TOKEN_CLOCK_SKEW_SECONDS is 30 by default
      t.clock.advanceSeconds(pastTolerance);
      try {
        await expectRejected(account.accessToken, 'AUTH_TOKEN_EXPIRED');
      } finally {
        t.clock.advanceSeconds(-pastTolerance);
      }
      t.clock.advanceSeconds(-120);
      try {
        await expectRejected(account.accessToken);
      } finally {
        t.clock.advanceSeconds(120);
      }
    });

    it('a JWE under the wrong key, or with another algorithm', async () => {
      const jws = new TextEncoder().encode(account.accessToken);
      const wrongKey = new Uint8Array(32).fill(7);
      await expectRejected(await new CompactEncrypt(jws).setProtectedHeader({ alg: 'dir', enc: 'A256GCM' }).encrypt(wrongKey));
      await expectRejected(await new CompactEncrypt(jws).setProtectedHeader({ alg: 'A256KW', enc: 'A256GCM' }).encrypt(wrongKey));
      await expectRejected(
        `${b64({ alg: 'dir', enc: 'A256GCM' })}..${base64url.encode('iv')}.${base64url.encode('ct')}.${base64url.encode('tag')}`,
      );
    });
  });

  describe('races', () => {
    it('20 concurrent reuses of a used refresh token after the grace: every one refused, and the session dies', async () => {
      const a = await signUpAndConfirm(t, http);
      const first = await http.post('/auth/refresh-token', { refreshToken: a.refreshToken });
      expect(first.status).to.equal(200);
      t.clock.advanceSeconds(t.config.refreshReuseGraceSeconds + 1);
      const results = await Promise.all(
        Array.from({ length: 20 }, () => http.post('/auth/refresh-token', { refreshToken: a.refreshToken })),
      );
      expect(results.filter((r) => r.status === 401 && r.body.error === 'AUTH_TOKEN_INVALID')).to.have.length(20);
      // A token used again after the grace means it leaked: the whole session is revoked, the first exchange's pair too.
      expect((await http.get('/auth/me', bearer(first.body.accessToken))).status).to.equal(401);
      expect((await http.post('/auth/refresh-token', { refreshToken: first.body.refreshToken })).status).to.equal(401);
    });

    it('10 concurrent signups with one e-mail: exactly one 201, the rest 409', async () => {
      const email = uniqueEmail('racer');
      const results = await Promise.all(Array.from({ length: 10 }, () => http.post('/auth/signup', { email, password: PASSWORD })));
      expect(results.map((r) => r.status).sort()).to.deep.equal([201, ...Array(9).fill(409)]);
      expect(results.filter((r) => r.status === 409).every((r) => r.body.error === 'AUTH_EMAIL_EXISTS')).to.equal(true);
      const { rows } = await t.ctx.pool.query('SELECT count(*)::int AS n FROM walgate.users WHERE email = $1', [email]);
      expect(rows[0].n).to.equal(1);
    });

    it('concurrent failed logins lock the account exactly once', async () => {
      const { http: strict } = await t.provision({ projectId: 'strict', name: 'master' });
      const a = await signUpAndConfirm(t, strict);
      const results = await Promise.all(
        Array.from({ length: 12 }, (_, i) => strict.post('/auth/login', { email: a.email, password: `wrong guess number ${i}` })),
      );
      const locks = results.filter((r) => r.status === 423);
      expect(results.filter((r) => r.status === 401).length + locks.length).to.equal(12);
      expect(new Set(locks.map((r) => r.body.lockedUntil)).size).to.equal(1);
      expect(results.filter((r) => r.status === 401).length).to.be.at.most(4);
    });
  });

  describe('codes', () => {
    async function pendingSignup(): Promise<{ email: string; code: string }> {
      const email = uniqueEmail('coder');
      await http.post('/auth/signup', { email, password: PASSWORD });
      return { email, code: codeIn(await t.smtp.waitFor(email)) };
    }
    const wrongCode = (code: string) => String((Number(code) + 1) % 1_000_000).padStart(6, '0');

    it('an expired code is refused', async () => {
      const { email, code } = await pendingSignup();
      t.clock.advanceSeconds(10 * 60 + 1);
      const res = await http.post('/auth/confirm-signup', { email, code });
      expect(res.status).to.equal(400);
      expect(res.body.error).to.equal('AUTH_INVALID_CODE');
    });

    it('after 5 wrong tries even the right code is refused', async () => {
      const { email, code } = await pendingSignup();
      for (let i = 0; i < 5; i++) {
        const res = await http.post('/auth/confirm-signup', { email, code: wrongCode(code) });
        expect(res.body.error).to.equal('AUTH_INVALID_CODE');
      }
      const sixth = await http.post('/auth/confirm-signup', { email, code });
      expect(sixth.status).to.equal(400);
      expect(sixth.body.error).to.equal('AUTH_INVALID_CODE');
    });

    it('a code works once; concurrent right answers make one winner', async () => {
      const { email, code } = await pendingSignup();
      const results = await Promise.all(Array.from({ length: 5 }, () => http.post('/auth/confirm-signup', { email, code })));
      expect(results.filter((r) => r.status === 200)).to.have.length(1);
      const reused = await http.post('/auth/confirm-signup', { email, code });
      expect(reused.status).to.equal(400);
      expect(reused.body.error).to.equal('AUTH_INVALID_CODE');
    });
  });

  it('login with an unknown e-mail takes about as long as with a wrong password (within 25 %)', async function () {
    const median = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    const time = async (email: string) => {
      const start = process.hrtime.bigint();
      const res = await http.post('/auth/login', { email, password: 'definitely the wrong password' });
      expect(res.status).to.equal(401);
      return Number(process.hrtime.bigint() - start) / 1e6;
    };
    await time(account.email); // warm-up
    const known: number[] = [];
    const unknown: number[] = [];
    for (let i = 0; i < 15; i++) {
      known.push(await time(account.email));
      unknown.push(await time(uniqueEmail('nobody')));
    }
    const [k, u] = [median(known), median(unknown)];
    expect(Math.abs(k - u) / Math.max(k, u), `wrong password ${k.toFixed(1)} ms, unknown e-mail ${u.toFixed(1)} ms`).to.be.below(0.25);
  });

  it('keeps nothing secret in plaintext at rest', async () => {
    const a = await signUpAndConfirm(t, http);
    await http.post('/auth/recover-password', { email: a.email });
    const recoveryCode = codeIn(await t.smtp.waitFor(a.email, { after: 1 }));
    const signupCode = codeIn(t.smtp.to(a.email)[0]!);
    const mgmt = await t.managementToken('shop');
    const { rows: tables } = await t.ctx.pool.query(`SELECT tablename FROM pg_tables WHERE schemaname = 'walgate'`);
    let dump = '';
    for (const { tablename } of tables) {
      const { rows } = await t.ctx.pool.query(`SELECT row_to_json(x)::text AS j FROM walgate.${tablename} x`);
      dump += rows.map((r) => r.j).join('\n');
    }
    for (const secret of [PASSWORD, a.refreshToken, mgmt, recoveryCode, a.accessToken]) {
      expect(dump.includes(secret), `found ${secret.slice(0, 12)}… in the database`).to.equal(false);
    }
    // The signup code was consumed; whatever is stored is a keyed hash, never the digits.
    expect(dump).not.to.match(new RegExp(`"code_hash":"[^"]*${signupCode}`));
    expect(dump).not.to.contain('PRIVATE KEY');
    const { rows } = await t.ctx.pool.query('SELECT password_hash FROM walgate.users WHERE id = $1', [a.userId]);
    expect(rows[0].password_hash).to.match(/^\$argon2id\$/);
    const keys = await t.ctx.pool.query('SELECT private_key FROM walgate.signing_keys');
    for (const k of keys.rows) expect(k.private_key[0]).to.equal(1); // sealed (version byte), not PEM
  });
});
