import { expect } from 'chai';
import type { TestApi } from '../../support/api.js';
import type { HttpClient } from '../../support/http.js';
import { codeIn } from '../../support/smtp.js';
import { bearer, PASSWORD, signUpAndConfirm, startAuthApi } from '../support.js';
import { base32Decode, claimsOf, enrolTotp, gql, totp } from './support.js';

// An authenticator app from enrolment to sign-in, with codes computed by the test's own RFC 6238
// (support.ts), and every way a code is refused.

describe('auth mfa: TOTP end to end (codes from an independent RFC 6238)', function () {
  this.timeout(60_000);
  let t: TestApi;
  let http: HttpClient;

  before(async () => {
    t = await startAuthApi();
    ({ http } = await t.provision({ projectId: 'totp', name: 'master' }));
  });
  after(() => t.close());

  const login = (email: string) => http.post('/auth/login', { email, password: PASSWORD });
  const nextStep = () => t.clock.advanceSeconds(30);

  it('enrol → verify → login answers mfaRequired without tokens → challenge → a pair with aal2 and amr [pwd, otp]', async () => {
    const a = await signUpAndConfirm(t, http);
    const enrol = await http.post('/auth/mfa/totp/enroll', {}, bearer(a.accessToken));
    expect(enrol.status).to.equal(200);
    expect(enrol.body).to.have.all.keys('factorId', 'secret', 'otpauthUrl', 'qrSvg');
    expect(enrol.body.secret).to.match(/^[A-Z2-7]{32}$/);
    const url = new URL(enrol.body.otpauthUrl);
    expect(url.protocol).to.equal('otpauth:');
    expect(url.searchParams.get('secret')).to.equal(enrol.body.secret);
    expect(url.searchParams.get('issuer')).to.equal('totp');
    expect(enrol.body.qrSvg).to.match(/^<svg[\s\S]*<\/svg>\s*$/);

    // Pending until a code is seen: a login still gets tokens, the factor is not listed.
    expect((await login(a.email)).body).to.have.property('accessToken');
    expect((await http.get('/auth/mfa/factors', bearer(a.accessToken))).body.factors).to.deep.equal([]);

    const wrong = await http.post('/auth/mfa/totp/verify', { factorId: enrol.body.factorId, code: '000000' }, bearer(a.accessToken));
    const right = totp(enrol.body.secret, t.clock.now());
    expect(wrong.status).to.equal(right === '000000' ? 200 : 400);
    const verify = await http.post('/auth/mfa/totp/verify', { factorId: enrol.body.factorId, code: right }, bearer(a.accessToken));
    expect(verify.status, JSON.stringify(verify.body)).to.equal(200);
    expect(verify.body.recoveryCodes).to.have.length(10);
    expect(new Set(verify.body.recoveryCodes).size).to.equal(10);
    expect(verify.body.factor).to.include({ id: enrol.body.factorId, type: 'totp' });

    // The secret is never shown again, nor stored in clear.
    const listed = await http.get('/auth/mfa/factors', bearer(a.accessToken));
    expect(listed.status).to.equal(200);
    expect(listed.body.recoveryCodesLeft).to.equal(10);
    expect(listed.body.factors).to.have.length(1);
    expect(JSON.stringify(listed.body)).not.to.include(enrol.body.secret);
    const stored = await t.ctx.pool.query('SELECT totp_secret FROM walgate.mfa_factors WHERE id = $1', [enrol.body.factorId]);
    const key = base32Decode(enrol.body.secret);
    expect(key).to.have.length(20);
    expect(stored.rows[0].totp_secret.includes(key), 'the key is sealed, not stored').to.equal(false);
    expect(stored.rows[0].totp_secret.includes(Buffer.from(enrol.body.secret))).to.equal(false);

    nextStep();
    const first = await login(a.email);
    expect(first.status).to.equal(200);
    expect(first.body).to.have.all.keys('mfaRequired', 'mfaToken', 'factors', 'deviceToken');
    expect(first.body.mfaRequired).to.equal(true);
    expect(first.body.factors).to.deep.equal([{ id: enrol.body.factorId, type: 'totp' }]);

    const code = totp(enrol.body.secret, t.clock.now());
    const pair = await http.post('/auth/mfa/challenge', { mfaToken: first.body.mfaToken, factorId: enrol.body.factorId, code });
    expect(pair.status, JSON.stringify(pair.body)).to.equal(200);
    expect(pair.body).to.include.keys('accessToken', 'refreshToken', 'tokenType', 'expiresIn');
    const claims = claimsOf(pair.body.accessToken);
    expect(claims.aal).to.equal('aal2');
    expect(claims.amr).to.deep.equal(['pwd', 'otp']);
    expect((await http.get('/auth/me', bearer(pair.body.accessToken))).status).to.equal(200);
    // A refresh keeps how the session began.
    const refreshed = await http.post('/auth/refresh-token', { refreshToken: pair.body.refreshToken });
    expect(claimsOf(refreshed.body.accessToken)).to.include({ aal: 'aal2' });

    // The mfaToken was single use.
    const again = await http.post('/auth/mfa/challenge', { mfaToken: first.body.mfaToken, factorId: enrol.body.factorId, code });
    expect(again.status).to.equal(401);
    expect(again.body.error).to.equal('AUTH_TOKEN_INVALID');
  });

  it('the same code twice → 400 AUTH_INVALID_CODE; a code two steps old → 400; one step old still works once', async () => {
    const a = await signUpAndConfirm(t, http);
    const { secret, factorId } = await enrolTotp(t, http, a);
    nextStep();

    const code = totp(secret, t.clock.now());
    const once = await http.post('/auth/mfa/challenge', { mfaToken: (await login(a.email)).body.mfaToken, factorId, code });
    expect(once.status).to.equal(200);
    const twice = await http.post('/auth/mfa/challenge', { mfaToken: (await login(a.email)).body.mfaToken, factorId, code });
    expect(twice.status).to.equal(400);
    expect(twice.body.error).to.equal('AUTH_INVALID_CODE');

    nextStep();
    nextStep();
    nextStep();
    const twoOld = totp(secret, t.clock.now(), 2);
    const stale = await http.post('/auth/mfa/challenge', { mfaToken: (await login(a.email)).body.mfaToken, factorId, code: twoOld });
    expect(stale.status).to.equal(400);
    expect(stale.body.error).to.equal('AUTH_INVALID_CODE');
    // One step of drift is allowed (a phone's clock a little behind).
    const oneOld = totp(secret, t.clock.now(), 1);
    const drift = await http.post('/auth/mfa/challenge', { mfaToken: (await login(a.email)).body.mfaToken, factorId, code: oneOld });
    expect(drift.status, JSON.stringify(drift.body)).to.equal(200);
    // ...but after a code of a later step, an earlier one never again.
    const now = totp(secret, t.clock.now());
    expect(
      (await http.post('/auth/mfa/challenge', { mfaToken: (await login(a.email)).body.mfaToken, factorId, code: now })).status,
    ).to.equal(200);
    const back = await http.post('/auth/mfa/challenge', { mfaToken: (await login(a.email)).body.mfaToken, factorId, code: oneOld });
    expect(back.body.error).to.equal('AUTH_INVALID_CODE');
  });

  it('5 wrong codes end the mfaToken: even the right code is refused after them', async () => {
    const a = await signUpAndConfirm(t, http);
    const { secret, factorId } = await enrolTotp(t, http, a);
    nextStep();
    const { mfaToken } = (await login(a.email)).body;
    const right = totp(secret, t.clock.now());
    const wrongCode = right === '123456' ? '654321' : '123456';
    for (let i = 0; i < 5; i++) {
      const r = await http.post('/auth/mfa/challenge', { mfaToken, factorId, code: wrongCode });
      expect(r.status).to.equal(400);
      expect(r.body.error).to.equal('AUTH_INVALID_CODE');
    }
    const dead = await http.post('/auth/mfa/challenge', { mfaToken, factorId, code: right });
    expect(dead.status).to.equal(401);
    expect(dead.body.error).to.equal('AUTH_TOKEN_INVALID');
    // A fresh login gets a fresh mfaToken, and the right code (not yet used) works with it.
    const fresh = await http.post('/auth/mfa/challenge', { mfaToken: (await login(a.email)).body.mfaToken, factorId, code: right });
    expect(fresh.status).to.equal(200);
  });

  it('an mfaToken lives 5 minutes, and belongs to its environment', async () => {
    const a = await signUpAndConfirm(t, http);
    const { secret, factorId } = await enrolTotp(t, http, a);
    nextStep();
    const { mfaToken } = (await login(a.email)).body;
    const { http: other } = await t.provision({ projectId: 'totp', name: 'staging' });
    const elsewhere = await other.post('/auth/mfa/challenge', { mfaToken, factorId, code: totp(secret, t.clock.now()) });
    expect(elsewhere.body.error).to.equal('AUTH_TOKEN_INVALID');
    t.clock.advanceSeconds(301);
    const late = await http.post('/auth/mfa/challenge', { mfaToken, factorId, code: totp(secret, t.clock.now()) });
    expect(late.status).to.equal(401);
    expect(late.body.error).to.equal('AUTH_TOKEN_INVALID');
  });

  it('a password reset keeps the second factor', async () => {
    const a = await signUpAndConfirm(t, http);
    await enrolTotp(t, http, a);
    const before = t.smtp.to(a.email).length;
    await http.post('/auth/recover-password', { email: a.email });
    const mail = await t.smtp.waitFor(a.email, { after: before });
    const code = codeIn(mail);
    const reset = await http.post('/auth/reset-password', { email: a.email, code, newPassword: `${PASSWORD} again` });
    expect(reset.status, JSON.stringify(reset.body)).to.equal(200);
    const after = await http.post('/auth/login', { email: a.email, password: `${PASSWORD} again` });
    expect(after.body.mfaRequired).to.equal(true);
    expect(after.body).not.to.have.property('accessToken');
  });

  it('GraphQL twins: enrol, verify, login (mfaRequired), challenge, factor list — same answers and errors as REST', async () => {
    const a = await signUpAndConfirm(t, http);
    const enrol = await gql(
      http,
      'mutation { mfaTotpEnroll(input: { name: "app" }) { factorId secret otpauthUrl qrSvg } }',
      {},
      a.accessToken,
    );
    const { factorId, secret } = enrol.body.data.mfaTotpEnroll;
    const VERIFY = 'mutation ($i: MfaTotpVerifyInput!) { mfaTotpVerify(input: $i) { factor { id type name } recoveryCodes } }';
    const verified = await gql(http, VERIFY, { i: { factorId, code: totp(secret, t.clock.now()) } }, a.accessToken);
    expect(verified.body.data.mfaTotpVerify.factor).to.deep.equal({ id: factorId, type: 'totp', name: 'app' });
    expect(verified.body.data.mfaTotpVerify.recoveryCodes).to.have.length(10);
    const listed = await gql(http, '{ mfaFactors { factors { id type } recoveryCodesLeft } }', {}, a.accessToken);
    expect(listed.body.data.mfaFactors).to.deep.equal({ factors: [{ id: factorId, type: 'totp' }], recoveryCodesLeft: 10 });

    nextStep();
    const LOGIN = 'mutation ($i: LoginInput!) { login(input: $i) { accessToken mfaRequired mfaToken factors { id type } } }';
    const login = await gql(http, LOGIN, { i: { email: a.email, password: PASSWORD } });
    expect(login.body.data.login).to.deep.include({ accessToken: null, mfaRequired: true, factors: [{ id: factorId, type: 'totp' }] });
    const CHALLENGE = 'mutation ($i: MfaChallengeInput!) { mfaChallenge(input: $i) { accessToken tokenType } }';
    const code = totp(secret, t.clock.now());
    const wrong = await gql(http, CHALLENGE, {
      i: { mfaToken: login.body.data.login.mfaToken, factorId, code: code === '111111' ? '222222' : '111111' },
    });
    expect(wrong.body.errors[0].extensions.code).to.equal('AUTH_INVALID_CODE');
    const pair = await gql(http, CHALLENGE, { i: { mfaToken: login.body.data.login.mfaToken, factorId, code } });
    expect(claimsOf(pair.body.data.mfaChallenge.accessToken)).to.deep.include({ aal: 'aal2', amr: ['pwd', 'otp'] });
    const replay = await gql(http, CHALLENGE, { i: { mfaToken: login.body.data.login.mfaToken, factorId, code } });
    expect(replay.body.errors[0].extensions.code).to.equal('AUTH_TOKEN_INVALID');
  });

  it('two requests with the same right code at once: exactly one gets the pair', async () => {
    const a = await signUpAndConfirm(t, http);
    const { secret, factorId } = await enrolTotp(t, http, a);
    nextStep();
    const [one, two] = [(await login(a.email)).body.mfaToken, (await login(a.email)).body.mfaToken];
    const code = totp(secret, t.clock.now());
    const answers = await Promise.all([one, two].map((mfaToken) => http.post('/auth/mfa/challenge', { mfaToken, factorId, code })));
    expect(answers.map((r) => r.status).sort()).to.deep.equal([200, 400]);
  });

  it('guesses are limited per user, however many mfaTokens: past 10 a minute, 429 with Retry-After', async () => {
    const a = await signUpAndConfirm(t, http);
    const { secret, factorId } = await enrolTotp(t, http, a);
    nextStep();
    const right = totp(secret, t.clock.now());
    const wrongCode = right === '123456' ? '654321' : '123456';
    const statuses: number[] = [];
    for (let token = 0; token < 3; token++) {
      const { mfaToken } = (await login(a.email)).body;
      for (let i = 0; i < 4; i++) {
        const r = await http.post('/auth/mfa/challenge', { mfaToken, factorId, code: wrongCode });
        statuses.push(r.status);
        if (r.status === 429) expect(Number(r.headers.get('retry-after'))).to.be.greaterThan(0);
      }
    }
    // Ten checks a minute per user: the enrolment's code was the first, so nine wrong guesses are answered.
    expect(statuses.slice(0, 9)).to.deep.equal(Array(9).fill(400));
    expect(statuses.slice(9)).to.deep.equal([429, 429, 429]);
    // Another user is not held back by it.
    const b = await signUpAndConfirm(t, http);
    const theirs = await enrolTotp(t, http, b);
    const ok = await http.post('/auth/mfa/challenge', {
      mfaToken: (await login(b.email)).body.mfaToken,
      factorId: theirs.factorId,
      code: totp(theirs.secret, t.clock.now(), -1),
    });
    expect(ok.status, JSON.stringify(ok.body)).to.equal(200);
  });
});
