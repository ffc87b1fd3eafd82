import { expect } from 'chai';
import type { TestApi } from '../support/api.js';
import type { HttpClient } from '../support/http.js';
import { codeIn } from '../support/smtp.js';
import { PASSWORD, startAuthApi, uniqueEmail } from '../auth/support.js';
import { TRANSPORTS, type Transport } from './transports.js';

// Every scenario of the REST flows (test/auth/flows.test.ts), as one table run through both
// transports with the same assertions: GraphQL is the same service, rules and errors.

interface World {
  t: TestApi;
  http: HttpClient;
  via: Transport;
}

async function account(w: World, email = uniqueEmail('twin'), password = PASSWORD) {
  const before = w.t.smtp.to(email).length;
  const signup = await w.via.signup(w.http, { email, password });
  expect(signup.code, JSON.stringify(signup.details)).to.equal(null);
  const mail = await w.t.smtp.waitFor(email, { after: before });
  const confirm = await w.via.confirmSignup(w.http, { email, code: codeIn(mail) });
  expect(confirm.code, JSON.stringify(confirm.details)).to.equal(null);
  return {
    email,
    password,
    userId: signup.body.userId as string,
    accessToken: confirm.body.accessToken as string,
    refreshToken: confirm.body.refreshToken as string,
  };
}

const CASES: Array<[string, (w: World) => Promise<void>]> = [
  [
    'signup mails a 6-digit code; confirming it verifies the address and logs in',
    async (w) => {
      const email = uniqueEmail('Mixed.Case');
      const signup = await w.via.signup(w.http, { email: `  ${email.toUpperCase()} `, password: PASSWORD, name: 'Ada' });
      expect(signup.code).to.equal(null);
      expect(signup.body.userId).to.match(/^[0-9a-f-]{36}$/);
      expect(signup.body.message).to.equal('Check your e-mail for a 6-digit code to confirm your address.');
      const mail = await w.t.smtp.waitFor(email.toLowerCase());
      expect((await w.via.login(w.http, { email, password: PASSWORD })).code).to.equal('AUTH_EMAIL_NOT_VERIFIED');
      const confirm = await w.via.confirmSignup(w.http, { email, code: codeIn(mail) });
      expect(confirm.code).to.equal(null);
      expect(confirm.body.accessToken.split('.')).to.have.length(3);
      expect(confirm.body.tokenType).to.equal('Bearer');
      expect(confirm.body.expiresIn).to.equal(900);
      expect(confirm.body.user).to.deep.include({ id: signup.body.userId, email: email.toLowerCase(), name: 'Ada', emailVerified: true });
      const me = await w.via.me(w.http, confirm.body.accessToken);
      expect(me.code).to.equal(null);
      expect(me.body.user.id).to.equal(signup.body.userId);
      expect(me.body.session.id).to.match(/^[0-9a-f-]{36}$/);
    },
  ],
  [
    'a registered e-mail is AUTH_EMAIL_EXISTS',
    async (w) => {
      const a = await account(w);
      expect((await w.via.signup(w.http, { email: a.email, password: PASSWORD })).code).to.equal('AUTH_EMAIL_EXISTS');
    },
  ],
  [
    'a weak password is VALIDATION_ERROR with the reasons in violations',
    async (w) => {
      const r = await w.via.signup(w.http, { email: uniqueEmail(), password: 'password1' });
      expect(r.code).to.equal('VALIDATION_ERROR');
      expect(r.details.violations).to.be.an('array').that.is.not.empty;
      expect((r.details.violations as Array<{ path: string }>).every((v) => v.path === 'password')).to.equal(true);
    },
  ],
  [
    'an invalid e-mail is a violation on email',
    async (w) => {
      const r = await w.via.signup(w.http, { email: 'not-an-address', password: PASSWORD });
      expect(r.code).to.equal('VALIDATION_ERROR');
      expect((r.details.violations as Array<{ path: string }>).map((v) => v.path)).to.include('email');
    },
  ],
  [
    'a wrong code, and an unknown e-mail, are AUTH_INVALID_CODE',
    async (w) => {
      const email = uniqueEmail();
      await w.via.signup(w.http, { email, password: PASSWORD });
      const code = codeIn(await w.t.smtp.waitFor(email));
      const wrong = code === '000000' ? '111111' : '000000';
      expect((await w.via.confirmSignup(w.http, { email, code: wrong })).code).to.equal('AUTH_INVALID_CODE');
      expect((await w.via.confirmSignup(w.http, { email: uniqueEmail('nobody'), code })).code).to.equal('AUTH_INVALID_CODE');
    },
  ],
  [
    'login returns a token pair that opens /me',
    async (w) => {
      const a = await account(w);
      const login = await w.via.login(w.http, { email: a.email, password: a.password });
      expect(login.code).to.equal(null);
      expect(login.body).to.include.all.keys('accessToken', 'refreshToken', 'tokenType', 'expiresIn');
      expect((await w.via.me(w.http, login.body.accessToken)).body.user.email).to.equal(a.email);
    },
  ],
  [
    'a wrong password and an unknown e-mail are both AUTH_INVALID_CREDENTIALS',
    async (w) => {
      const a = await account(w);
      expect((await w.via.login(w.http, { email: a.email, password: 'not the password at all' })).code).to.equal(
        'AUTH_INVALID_CREDENTIALS',
      );
      expect((await w.via.login(w.http, { email: uniqueEmail('nobody'), password: PASSWORD })).code).to.equal('AUTH_INVALID_CREDENTIALS');
    },
  ],
  [
    '5 failures lock the account: AUTH_ACCOUNT_LOCKED with lockedUntil, even for the right password',
    async (w) => {
      const a = await account(w);
      for (let i = 0; i < 4; i++)
        expect((await w.via.login(w.http, { email: a.email, password: 'wrong password here' })).code).to.equal('AUTH_INVALID_CREDENTIALS');
      const fifth = await w.via.login(w.http, { email: a.email, password: 'wrong password here' });
      expect(fifth.code).to.equal('AUTH_ACCOUNT_LOCKED');
      expect(new Date(fifth.details.lockedUntil as string).getTime()).to.be.above(w.t.clock.now().getTime());
      const right = await w.via.login(w.http, { email: a.email, password: a.password });
      expect(right.code).to.equal('AUTH_ACCOUNT_LOCKED');
      expect(right.details.lockedUntil).to.equal(fifth.details.lockedUntil);
    },
  ],
  [
    'recovery answers alike for known and unknown addresses; the code resets the password and ends every session',
    async (w) => {
      const a = await account(w);
      const unknown = await w.via.recoverPassword(w.http, { email: uniqueEmail('nobody') });
      const known = await w.via.recoverPassword(w.http, { email: a.email });
      expect(unknown).to.deep.equal(known);
      expect(known.body.message).to.match(/If the address is registered/);
      const mail = await w.t.smtp.waitFor(a.email, { after: 1 });
      const newPassword = 'another quite long passphrase 7';
      const reset = await w.via.resetPassword(w.http, { email: a.email, code: codeIn(mail), newPassword });
      expect(reset.code).to.equal(null);
      expect(reset.body.message).to.equal('Your password has been reset. Sign in with the new password.');
      expect((await w.via.me(w.http, a.accessToken)).code).to.equal('AUTH_TOKEN_INVALID');
      expect((await w.via.refreshToken(w.http, { refreshToken: a.refreshToken })).code).to.equal('AUTH_TOKEN_INVALID');
      expect((await w.via.login(w.http, { email: a.email, password: a.password })).code).to.equal('AUTH_INVALID_CREDENTIALS');
      expect((await w.via.login(w.http, { email: a.email, password: newPassword })).code).to.equal(null);
    },
  ],
  [
    'a weak new password is refused before the code is spent',
    async (w) => {
      const a = await account(w);
      await w.via.recoverPassword(w.http, { email: a.email });
      const code = codeIn(await w.t.smtp.waitFor(a.email, { after: 1 }));
      const weak = await w.via.resetPassword(w.http, { email: a.email, code, newPassword: 'password1' });
      expect(weak.code).to.equal('VALIDATION_ERROR');
      expect((weak.details.violations as Array<{ path: string }>).map((v) => v.path)).to.include('newPassword');
      expect((await w.via.resetPassword(w.http, { email: a.email, code, newPassword: 'another quite long passphrase 7' })).code).to.equal(
        null,
      );
    },
  ],
  [
    'a refresh token is exchanged; presenting it again after the grace revokes the session',
    async (w) => {
      const a = await account(w);
      const first = await w.via.refreshToken(w.http, { refreshToken: a.refreshToken });
      expect(first.code).to.equal(null);
      expect(first.body.refreshToken).to.not.equal(a.refreshToken);
      expect((await w.via.me(w.http, first.body.accessToken)).code).to.equal(null);
      w.t.clock.advanceSeconds(w.t.config.refreshReuseGraceSeconds + 1);
      expect((await w.via.refreshToken(w.http, { refreshToken: a.refreshToken })).code).to.equal('AUTH_TOKEN_INVALID');
      expect((await w.via.me(w.http, first.body.accessToken)).code).to.equal('AUTH_TOKEN_INVALID');
      expect((await w.via.refreshToken(w.http, { refreshToken: first.body.refreshToken })).code).to.equal('AUTH_TOKEN_INVALID');
    },
  ],
  [
    'a made-up refresh token is AUTH_TOKEN_INVALID',
    async (w) => {
      expect((await w.via.refreshToken(w.http, { refreshToken: 'x'.repeat(43) })).code).to.equal('AUTH_TOKEN_INVALID');
    },
  ],
  [
    'logout: the access token is refused afterwards and its refresh token is dead',
    async (w) => {
      const a = await account(w);
      const out = await w.via.logout(w.http, a.accessToken);
      expect(out.code).to.equal(null);
      expect(out.body.message).to.equal('You have been logged out.');
      expect((await w.via.me(w.http, a.accessToken)).code).to.equal('AUTH_TOKEN_INVALID');
      expect((await w.via.refreshToken(w.http, { refreshToken: a.refreshToken })).code).to.equal('AUTH_TOKEN_INVALID');
    },
  ],
  [
    'logout and me without a bearer token are AUTH_TOKEN_INVALID',
    async (w) => {
      expect((await w.via.logout(w.http)).code).to.equal('AUTH_TOKEN_INVALID');
      expect((await w.via.me(w.http)).code).to.equal('AUTH_TOKEN_INVALID');
      expect((await w.via.me(w.http, 'not.a.token')).code).to.equal('AUTH_TOKEN_INVALID');
    },
  ],
  [
    'an expired access token is AUTH_TOKEN_EXPIRED',
    async (w) => {
      const a = await account(w);
      w.t.clock.advanceSeconds(900 + 31); // past the 15 minutes and the 30 s clock tolerance
      expect((await w.via.me(w.http, a.accessToken)).code).to.equal('AUTH_TOKEN_EXPIRED');
    },
  ],
  [
    'the key set holds the active and the next ES256 key',
    async (w) => {
      const jwks = await w.via.jwks(w.http);
      expect(jwks.code).to.equal(null);
      expect(jwks.body.keys).to.have.length(2);
      for (const key of jwks.body.keys) expect(key).to.deep.include({ kty: 'EC', crv: 'P-256', alg: 'ES256', use: 'sig' });
    },
  ],
  [
    'an unknown project is AUTH_NOT_CONFIGURED',
    async (w) => {
      const other = w.http.with({ 'x-project-id': 'no-such-project' });
      expect((await w.via.login(other, { email: uniqueEmail(), password: PASSWORD })).code).to.equal('AUTH_NOT_CONFIGURED');
      expect((await w.via.jwks(other)).code).to.equal('AUTH_NOT_CONFIGURED');
    },
  ],
];

for (const via of TRANSPORTS) {
  describe(`auth twins: every REST flow through ${via.name === 'rest' ? 'REST' : 'GraphQL'}`, () => {
    const w = { via } as World;
    before(async () => {
      w.t = await startAuthApi();
      ({ http: w.http } = await w.t.provision({ projectId: 'shop', name: 'master' }));
    });
    after(() => w.t?.close());
    for (const [name, scenario] of CASES) it(name, () => scenario(w));
  });
}
