import { expect } from 'chai';
import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import { rotateSigningKeys } from '../../src/auth/keys.js';
import { findEnvironment } from '../../src/projects/environments.js';
import type { TestApi } from '../support/api.js';
import { HttpClient } from '../support/http.js';
import { codeIn } from '../support/smtp.js';
import { bearer, PASSWORD, signUpAndConfirm, startAuthApi, uniqueEmail } from './support.js';

describe('auth: the flows of the seed, through HTTP', () => {
  let t: TestApi;
  let http: HttpClient;

  before(async () => {
    t = await startAuthApi();
    ({ http } = await t.provision({ projectId: 'shop', name: 'master' }));
  });
  after(() => t.close());

  describe('signup and confirm-signup', () => {
    it('creates an unverified user, mails a 6-digit code, and confirming it logs in', async () => {
      const email = uniqueEmail('Mixed.Case');
      const res = await http.post('/auth/signup', { email: `  ${email.toUpperCase()} `, password: PASSWORD, name: 'Ada' });
      expect(res.status).to.equal(201);
      expect(res.body).to.have.all.keys('userId', 'message');
      expect(res.body.userId).to.match(/^[0-9a-f-]{36}$/);
      expect(res.body.message).to.equal('Check your e-mail for a 6-digit code to confirm your address.');
      const mail = await t.smtp.waitFor(email.toLowerCase());
      expect(mail.subject).to.match(/\b\d{6}\b/);
      expect(mail.text).to.contain(codeIn(mail));
      expect(mail.html).to.contain(codeIn(mail));
      expect(mail.from).to.equal('no-reply@localhost');

      const unverified = await http.post('/auth/login', { email, password: PASSWORD });
      expect(unverified.status).to.equal(403);
      expect(unverified.body.error).to.equal('AUTH_EMAIL_NOT_VERIFIED');

      const confirm = await http.post('/auth/confirm-signup', { email, code: codeIn(mail) });
      expect(confirm.status).to.equal(200);
      expect(confirm.body.accessToken.split('.')).to.have.length(3);
      expect(confirm.body.refreshToken).to.be.a('string').with.length.above(40);
      expect(confirm.body.user).to.deep.include({ id: res.body.userId, email: email.toLowerCase(), name: 'Ada', emailVerified: true });
      expect(new Date(confirm.body.user.createdAt).toISOString()).to.equal(confirm.body.user.createdAt);

      const me = await http.get('/auth/me', bearer(confirm.body.accessToken));
      expect(me.status).to.equal(200);
      expect(me.body.user.id).to.equal(res.body.userId);
      expect(me.body.session).to.have.all.keys('id', 'expiresAt');
    });

    it('refuses a registered e-mail with 409 AUTH_EMAIL_EXISTS', async () => {
      const a = await signUpAndConfirm(t, http);
      const again = await http.post('/auth/signup', { email: a.email, password: PASSWORD });
      expect(again.status).to.equal(409);
      expect(again.body.error).to.equal('AUTH_EMAIL_EXISTS');
    });

    it('refuses weak passwords with the reasons in violations', async () => {
      const email = uniqueEmail('weakling');
      const local = email.split('@')[0]!;
      for (const [password, reason] of [
        ['short', /at least 8/],
        ['password123', /too easy to guess/],
        [`${local.toUpperCase()}-correct-horse-battery`, /must not contain the e-mail/],
        ['x'.repeat(257), /at most 256/],
      ] as const) {
        const res = await http.post('/auth/signup', { email, password });
        expect(res.status, password).to.equal(400);
        expect(res.body.error).to.equal('VALIDATION_ERROR');
        expect(res.body.violations.map((v: { message: string }) => v.message).join(' ')).to.match(reason);
        expect(res.body.violations[0].path).to.equal('password');
      }
      expect(t.smtp.to(email)).to.have.length(0);
    });

    it('answers a wrong code with 400 AUTH_INVALID_CODE, an unknown e-mail too', async () => {
      const email = uniqueEmail();
      await http.post('/auth/signup', { email, password: PASSWORD });
      const mail = await t.smtp.waitFor(email);
      const wrong = String((Number(codeIn(mail)) + 1) % 1_000_000).padStart(6, '0');
      const res = await http.post('/auth/confirm-signup', { email, code: wrong });
      expect(res.status).to.equal(400);
      expect(res.body.error).to.equal('AUTH_INVALID_CODE');
      const unknown = await http.post('/auth/confirm-signup', { email: uniqueEmail('nobody'), code: '123456' });
      expect(unknown.status).to.equal(400);
      expect(unknown.body.error).to.equal('AUTH_INVALID_CODE');
    });
  });

  describe('login', () => {
    it('returns a token pair for the right password', async () => {
      const a = await signUpAndConfirm(t, http);
      const res = await http.post('/auth/login', { email: a.email, password: PASSWORD });
      expect(res.status).to.equal(200);
      expect(res.body).to.have.all.keys('accessToken', 'refreshToken', 'tokenType', 'expiresIn', 'deviceToken');
      expect(res.body.tokenType).to.equal('Bearer');
      expect(res.body.expiresIn).to.equal(900);
      const me = await http.get('/auth/me', bearer(res.body.accessToken));
      expect(me.status).to.equal(200);
    });

    it('answers a wrong password and an unknown e-mail alike: 401 AUTH_INVALID_CREDENTIALS', async () => {
      const a = await signUpAndConfirm(t, http);
      const wrong = await http.post('/auth/login', { email: a.email, password: 'not the password at all' });
      const unknown = await http.post('/auth/login', { email: uniqueEmail('ghost'), password: PASSWORD });
      for (const res of [wrong, unknown]) {
        expect(res.status).to.equal(401);
        expect(res.body.error).to.equal('AUTH_INVALID_CREDENTIALS');
      }
      expect(wrong.body).to.deep.equal(unknown.body);
    });

    it('locks the account after 5 failures (423 with lockedUntil) until it ends or a reset', async () => {
      const a = await signUpAndConfirm(t, http);
      const statuses: number[] = [];
      let lockedBody: any;
      for (let i = 0; i < 6; i++) {
        const res = await http.post('/auth/login', { email: a.email, password: `wrong password ${i}` });
        statuses.push(res.status);
        if (res.status === 423) lockedBody = res.body;
      }
      expect(statuses).to.deep.equal([401, 401, 401, 401, 423, 423]);
      expect(lockedBody.error).to.equal('AUTH_ACCOUNT_LOCKED');
      const until = new Date(lockedBody.lockedUntil);
      expect(until.getTime() - t.clock.now().getTime()).to.equal(15 * 60 * 1000);
      // Locked: even the right password is refused.
      expect((await http.post('/auth/login', { email: a.email, password: PASSWORD })).status).to.equal(423);
      // The lock ends by itself.
      t.clock.advanceSeconds(15 * 60 + 1);
      expect((await http.post('/auth/login', { email: a.email, password: PASSWORD })).status).to.equal(200);
    });

    it('upgrades a bcrypt hash (an imported user) to argon2id at the next login', async () => {
      const a = await signUpAndConfirm(t, http);
      const bcrypt = await import('@node-rs/bcrypt');
      await t.ctx.pool.query('UPDATE walgate.users SET password_hash = $2 WHERE id = $1', [a.userId, await bcrypt.hash(PASSWORD, 4)]);
      expect((await http.post('/auth/login', { email: a.email, password: 'wrong horse battery staple' })).status).to.equal(401);
      expect((await http.post('/auth/login', { email: a.email, password: PASSWORD })).status).to.equal(200);
      const { rows } = await t.ctx.pool.query('SELECT password_hash FROM walgate.users WHERE id = $1', [a.userId]);
      expect(rows[0].password_hash).to.match(/^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
      expect((await http.post('/auth/login', { email: a.email, password: PASSWORD })).status).to.equal(200);
    });
  });

  describe('recover-password and reset-password', () => {
    it('answers 200 whether or not the e-mail is registered, and mails only a registered one', async () => {
      const a = await signUpAndConfirm(t, http);
      const ghost = uniqueEmail('ghost');
      const known = await http.post('/auth/recover-password', { email: a.email });
      const unknown = await http.post('/auth/recover-password', { email: ghost });
      expect(known.status).to.equal(200);
      expect(unknown.status).to.equal(200);
      expect(known.body).to.deep.equal(unknown.body);
      const mail = await t.smtp.waitFor(a.email, { after: 1 });
      expect(mail.subject).to.match(/reset/i);
      await new Promise((r) => setTimeout(r, 200));
      expect(t.smtp.to(ghost)).to.have.length(0);
    });

    it('resets the password with the code, ends every session and the lockout', async () => {
      const a = await signUpAndConfirm(t, http);
      const other = await http.post('/auth/login', { email: a.email, password: PASSWORD });
      for (let i = 0; i < 5; i++) await http.post('/auth/login', { email: a.email, password: `nope nope ${i}` });
      expect((await http.post('/auth/login', { email: a.email, password: PASSWORD })).status).to.equal(423);

      await http.post('/auth/recover-password', { email: a.email });
      const mail = await t.smtp.waitFor(a.email, { after: 1 });
      const newPassword = 'a brand new passphrase 2026';
      const res = await http.post('/auth/reset-password', { email: a.email, code: codeIn(mail), newPassword });
      expect(res.status).to.equal(200);
      expect(res.body).to.deep.equal({ message: 'Your password has been reset. Sign in with the new password.' });

      for (const token of [a.accessToken, other.body.accessToken]) {
        const me = await http.get('/auth/me', bearer(token));
        expect(me.status).to.equal(401);
        expect(me.body.error).to.equal('AUTH_TOKEN_INVALID');
      }
      expect((await http.post('/auth/refresh-token', { refreshToken: a.refreshToken })).status).to.equal(401);
      expect((await http.post('/auth/login', { email: a.email, password: PASSWORD })).status).to.equal(401);
      expect((await http.post('/auth/login', { email: a.email, password: newPassword })).status).to.equal(200);
      const reused = await http.post('/auth/reset-password', {
        email: a.email,
        code: codeIn(mail),
        newPassword: 'yet another passphrase 77',
      });
      expect(reused.status).to.equal(400);
      expect(reused.body.error).to.equal('AUTH_INVALID_CODE');
    });

    it('refuses a weak new password before spending the code', async () => {
      const a = await signUpAndConfirm(t, http);
      await http.post('/auth/recover-password', { email: a.email });
      const mail = await t.smtp.waitFor(a.email, { after: 1 });
      const weak = await http.post('/auth/reset-password', { email: a.email, code: codeIn(mail), newPassword: 'password' });
      expect(weak.status).to.equal(400);
      expect(weak.body.violations[0].path).to.equal('newPassword');
      const ok = await http.post('/auth/reset-password', {
        email: a.email,
        code: codeIn(mail),
        newPassword: 'a brand new passphrase 2026',
      });
      expect(ok.status).to.equal(200);
    });
  });

  describe('refresh-token and logout', () => {
    it('exchanges a refresh token for a new pair; using it again after the grace revokes the session', async () => {
      const a = await signUpAndConfirm(t, http);
      const first = await http.post('/auth/refresh-token', { refreshToken: a.refreshToken });
      expect(first.status).to.equal(200);
      expect(first.body).to.have.all.keys('accessToken', 'refreshToken', 'tokenType', 'expiresIn');
      expect(first.body.refreshToken).not.to.equal(a.refreshToken);
      expect((await http.get('/auth/me', bearer(first.body.accessToken))).status).to.equal(200);

      t.clock.advanceSeconds(t.config.refreshReuseGraceSeconds + 1);
      const reuse = await http.post('/auth/refresh-token', { refreshToken: a.refreshToken });
      expect(reuse.status).to.equal(401);
      expect(reuse.body.error).to.equal('AUTH_TOKEN_INVALID');
      // The family is revoked: the pair issued by the legitimate exchange is dead too.
      expect((await http.get('/auth/me', bearer(first.body.accessToken))).status).to.equal(401);
      expect((await http.post('/auth/refresh-token', { refreshToken: first.body.refreshToken })).status).to.equal(401);
    });

    it('refuses a made-up refresh token', async () => {
      const res = await http.post('/auth/refresh-token', { refreshToken: 'not-a-token' });
      expect(res.status).to.equal(401);
      expect(res.body.error).to.equal('AUTH_TOKEN_INVALID');
    });

    it('logs out: the access token gives 401 afterwards and its refresh token is dead', async () => {
      const a = await signUpAndConfirm(t, http);
      const res = await http.post('/auth/logout', undefined, bearer(a.accessToken));
      expect(res.status).to.equal(200);
      expect(res.body).to.deep.equal({ message: 'You have been logged out.' });
      const me = await http.get('/auth/me', bearer(a.accessToken));
      expect(me.status).to.equal(401);
      expect(me.body.error).to.equal('AUTH_TOKEN_INVALID');
      expect((await http.post('/auth/logout', undefined, bearer(a.accessToken))).status).to.equal(401);
      expect((await http.post('/auth/refresh-token', { refreshToken: a.refreshToken })).status).to.equal(401);
    });

    it('requires a bearer token to log out', async () => {
      const attempts: Array<Record<string, string>> = [
        {},
        { authorization: 'Basic abc' },
        { authorization: 'Bearer' },
        { authorization: 'Bearer not.a.jwt' },
      ];
      for (const headers of attempts) {
        const res = await http.post('/auth/logout', undefined, { headers });
        expect(res.status).to.equal(401);
        expect(res.body.error).to.equal('AUTH_TOKEN_INVALID');
      }
    });

    it('answers an expired access token with AUTH_TOKEN_EXPIRED', async () => {
      const a = await signUpAndConfirm(t, http);
      t.clock.advanceSeconds(900 + 31); // past the 15 minutes and the 30 s clock tolerance
      const res = await http.get('/auth/me', bearer(a.accessToken));
      expect(res.status).to.equal(401);
      expect(res.body.error).to.equal('AUTH_TOKEN_EXPIRED');
    });
  });

  describe('JWKS and key rotation', () => {
    it('publishes the keys; a token verifies with createRemoteJWKSet before and after a rotation', async () => {
      const jwksUrl = new URL(`${t.url}/auth/.well-known/jwks.json?projectId=shop&environment=master`);
      const res = await http.get('/auth/.well-known/jwks.json');
      expect(res.status).to.equal(200);
      expect(res.headers.get('cache-control')).to.equal('public, max-age=300');
      expect(res.body.keys).to.have.length(2); // active and next
      for (const k of res.body.keys) {
        expect(k).to.include({ kty: 'EC', crv: 'P-256', alg: 'ES256', use: 'sig' });
        expect(k).not.to.have.any.keys('d', 'p', 'q');
      }
      const a = await signUpAndConfirm(t, http);
      const options = { issuer: 'http://walgate.test/auth/issuers/shop/master', audience: 'shop' };
      const remote = createRemoteJWKSet(jwksUrl);
      const before = await jwtVerify(a.accessToken, remote, { ...options, currentDate: t.clock.now() });
      expect(before.payload.sub).to.equal(a.userId);
      const nextKid = res.body.keys.find((k: { kid: string }) => k.kid !== decodeProtectedHeader(a.accessToken).kid).kid;

      const env = (await findEnvironment(t.ctx.pool, 'shop', 'master'))!;
      const rotated = await rotateSigningKeys(t.ctx.pool, t.ctx.secrets, env, t.clock.now());
      expect(rotated.active).to.equal(nextKid); // the key published ahead is the one that signs now
      const b = await http.post('/auth/login', { email: a.email, password: PASSWORD });
      expect(decodeProtectedHeader(b.body.accessToken).kid).to.equal(nextKid);
      // A verifier that cached the set before the rotation already knows the new key.
      expect((await jwtVerify(b.body.accessToken, remote, { ...options, currentDate: t.clock.now() })).payload.sub).to.equal(a.userId);
      // And the token of the retired key still verifies, against a fresh fetch too.
      const fresh = createRemoteJWKSet(jwksUrl);
      expect((await jwtVerify(a.accessToken, fresh, { ...options, currentDate: t.clock.now() })).payload.sub).to.equal(a.userId);
      expect((await http.get('/auth/me', bearer(a.accessToken))).status).to.equal(200);
      const after = await http.get('/auth/.well-known/jwks.json');
      expect(after.body.keys.map((k: { kid: string }) => k.kid)).to.include.members([rotated.active, rotated.next, rotated.retired]);
      // Once its tokens have expired, the retired key is no longer published.
      t.clock.advanceSeconds(900 + 301);
      const later = await http.get('/auth/.well-known/jwks.json');
      expect(later.body.keys.map((k: { kid: string }) => k.kid)).not.to.include(rotated.retired);
    });
  });

  describe('JWE access tokens', () => {
    it('issues 5-part encrypted tokens for an environment set to jwe, and accepts both forms', async () => {
      const { http: jweHttp } = await t.provision({ projectId: 'secret', name: 'master', tokenFormat: 'jwe' });
      const a = await signUpAndConfirm(t, jweHttp);
      expect(a.accessToken.split('.')).to.have.length(5);
      expect(JSON.parse(Buffer.from(a.accessToken.split('.')[0]!, 'base64url').toString())).to.include({ alg: 'dir', enc: 'A256GCM' });
      expect((await jweHttp.get('/auth/me', bearer(a.accessToken))).status).to.equal(200);
      // Switched to jws later: tokens issued before keep working, new ones are signed JWTs.
      await t.ctx.pool.query(`UPDATE walgate.environments SET token_format = 'jws' WHERE project_id = 'secret'`);
      const login = await jweHttp.post('/auth/login', { email: a.email, password: PASSWORD });
      expect(login.body.accessToken.split('.')).to.have.length(3);
      expect((await jweHttp.get('/auth/me', bearer(login.body.accessToken))).status).to.equal(200);
      expect((await jweHttp.get('/auth/me', bearer(a.accessToken))).status).to.equal(200);
    });
  });

  describe('project and environment', () => {
    it('answers 404 AUTH_NOT_CONFIGURED for an unknown project, an unknown environment, or auth off', async () => {
      await t.provision({ projectId: 'quiet', name: 'master', authEnabled: false });
      const scopes: Array<Record<string, string>> = [
        { 'x-project-id': 'nope' },
        { 'x-project-id': 'shop', environment: 'staging' },
        { 'x-project-id': 'quiet' },
      ];
      for (const headers of scopes) {
        for (const [method, path] of [
          ['POST', '/auth/signup'],
          ['POST', '/auth/login'],
          ['GET', '/auth/.well-known/jwks.json'],
        ] as const) {
          const res = await http
            .with(headers)
            .request(method, path, method === 'POST' ? { body: { email: 'a@b.co', password: PASSWORD } } : {});
          expect(res.status, `${method} ${path} ${JSON.stringify(headers)}`).to.equal(404);
          expect(res.body.error).to.equal('AUTH_NOT_CONFIGURED');
        }
      }
    });

    it('defaults the environment header to master, and keeps environments apart', async () => {
      const { http: staging } = await t.provision({ projectId: 'shop', name: 'staging' });
      const a = await signUpAndConfirm(t, http.with({ environment: 'master' }));
      const defaulted = new HttpClient(t.url, { 'x-project-id': 'shop' });
      expect((await defaulted.get('/auth/me', bearer(a.accessToken))).status).to.equal(200);
      const other = await staging.get('/auth/me', bearer(a.accessToken));
      expect(other.status).to.equal(401);
      expect((await staging.post('/auth/login', { email: a.email, password: PASSWORD })).status).to.equal(401);
    });
  });
});
