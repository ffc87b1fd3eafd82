import { expect } from 'chai';
import type { TestApi } from '../../support/api.js';
import type { HttpClient } from '../../support/http.js';
import { bearer, PASSWORD, signUpAndConfirm, startAuthApi, type Account } from '../support.js';
import { claimsOf, enrolTotp, FACTOR_ADDED_SUBJECT, FACTOR_REMOVED_SUBJECT, totp } from './support.js';

// Issue 36, finding 1: an aal1 session (a token from before the user enrolled, or a stolen
// password) took over the account's second factor by enrolling one of its own. Once a user has a
// factor, every change of factors needs a session that proved a second factor within
// `mfaReauthSeconds`; every addition and removal is an audit row and an e-mail to the user.

describe('auth mfa: changing factors needs a recent second factor once one exists', function () {
  this.timeout(60_000);
  let t: TestApi;
  let http: HttpClient;
  let manage: ReturnType<typeof bearer>;

  before(async () => {
    t = await startAuthApi();
    ({ http } = await t.provision({ projectId: 'takeover', name: 'master' }));
    manage = bearer(await t.managementToken('takeover'));
  });
  after(() => t.close());

  /** A user with an authenticator app, and an aal2 token of a session that just showed it. */
  async function withFactor(): Promise<{ a: Account; factorId: string; secret: string; strong: string }> {
    const a = await signUpAndConfirm(t, http);
    const { factorId, secret } = await enrolTotp(t, http, a);
    t.clock.advanceSeconds(30); // the enrolment's code is used up; the next step's code is fresh
    const step = await http.post('/auth/login', { email: a.email, password: PASSWORD });
    const pair = await http.post('/auth/mfa/challenge', { mfaToken: step.body.mfaToken, factorId, code: totp(secret, t.clock.now()) });
    expect(pair.status, JSON.stringify(pair.body)).to.equal(200);
    expect(claimsOf(pair.body.accessToken).aal).to.equal('aal2');
    return { a, factorId, secret, strong: pair.body.accessToken };
  }

  const expectMfaRequired = (res: { status: number; body: any }) => {
    expect(res.status, JSON.stringify(res.body)).to.equal(403);
    expect(res.body.error).to.equal('AUTH_MFA_REQUIRED');
    expect(res.body).not.to.have.any.keys('secret', 'factorId', 'challenge', 'recoveryCodes');
  };

  it('an aal1 token of a user with a factor: TOTP enrol 403, verify 403, passkey registration options 403; nothing is added', async () => {
    const { a, factorId } = await withFactor();
    // The token of the confirmation, from before the enrolment: amr [email], aal1.
    expect(claimsOf(a.accessToken)).to.deep.include({ amr: ['email'], aal: 'aal1' });
    expectMfaRequired(await http.post('/auth/mfa/totp/enroll', { name: 'attacker' }, bearer(a.accessToken)));
    expectMfaRequired(await http.post('/auth/mfa/totp/verify', { factorId, code: '123456' }, bearer(a.accessToken)));
    expectMfaRequired(await http.post('/auth/passkeys/register/options', undefined, bearer(a.accessToken)));
    // A fresh password login is aal1 too: a stolen password alone cannot add a factor either.
    const factors = await t.ctx.pool.query('SELECT status FROM walgate.mfa_factors WHERE user_id = $1', [a.userId]);
    expect(factors.rows).to.deep.equal([{ status: 'active' }]);
  });

  it('at a fresh aal2: a second authenticator enrols and verifies (200), passkey options 200, and the user is told by e-mail', async () => {
    const { a, strong } = await withFactor();
    const enrol = await http.post('/auth/mfa/totp/enroll', { name: 'tablet' }, bearer(strong));
    expect(enrol.status, JSON.stringify(enrol.body)).to.equal(200);
    const mailed = t.smtp.to(a.email).length;
    const verify = await http.post(
      '/auth/mfa/totp/verify',
      { factorId: enrol.body.factorId, code: totp(enrol.body.secret, t.clock.now()) },
      bearer(strong),
    );
    expect(verify.status, JSON.stringify(verify.body)).to.equal(200);
    // Not the first factor: no new recovery codes.
    expect(verify.body.recoveryCodes).to.equal(undefined);
    const notice = await t.smtp.waitFor(a.email, { after: mailed });
    expect(notice.subject).to.equal(FACTOR_ADDED_SUBJECT);
    expect(notice.text).to.include('authenticator app "tablet"');
    expect(notice.text).not.to.include(enrol.body.secret);
    const options = await http.post('/auth/passkeys/register/options', undefined, bearer(strong));
    expect(options.status, JSON.stringify(options.body)).to.equal(200);
    expect(options.body.challenge).to.be.a('string');

    const events = await http.get(`/api/rest/_users/${a.userId}/events`, manage);
    const added = (events.body.events as Array<{ type: string }>).filter((e) => e.type === 'user.mfa_factor_added');
    expect(added).to.have.length(2);
  });

  it('an aal2 session older than mfaReauthSeconds (15 min): enrol, remove and new recovery codes are 403; a fresh one removes, and the e-mail says so', async () => {
    const { a, factorId, secret, strong } = await withFactor();
    t.clock.advanceSeconds(15 * 60 + 1);
    expectMfaRequired(await http.post('/auth/mfa/totp/enroll', {}, bearer(strong)));
    expectMfaRequired(await http.delete(`/auth/mfa/factors/${factorId}`, bearer(strong)));
    expectMfaRequired(await http.post('/auth/mfa/recovery-codes', undefined, bearer(strong)));
    expectMfaRequired(await http.post('/auth/passkeys/register/options', undefined, bearer(strong)));
    // The session itself lives on: only changes of factors want a fresh proof.
    const me = await http.get('/auth/me', bearer(strong));
    expect(me.status).to.equal(200);

    const step = await http.post('/auth/login', { email: a.email, password: PASSWORD });
    const fresh = await http.post('/auth/mfa/challenge', { mfaToken: step.body.mfaToken, factorId, code: totp(secret, t.clock.now()) });
    expect(fresh.status, JSON.stringify(fresh.body)).to.equal(200);
    const mailed = t.smtp.to(a.email).length;
    const removed = await http.delete(`/auth/mfa/factors/${factorId}`, bearer(fresh.body.accessToken));
    expect(removed.status, JSON.stringify(removed.body)).to.equal(200);
    const notice = await t.smtp.waitFor(a.email, { after: mailed });
    expect(notice.subject).to.equal(FACTOR_REMOVED_SUBJECT);
    const events = await http.get(`/api/rest/_users/${a.userId}/events`, manage);
    expect((events.body.events as Array<{ type: string }>).map((e) => e.type)).to.include('user.mfa_factor_removed');
  });

  it('the setting mfaReauthSeconds moves the bound', async () => {
    const patched = await http.patch('/api/rest/_environment', { mfaReauthSeconds: 60 }, manage);
    expect(patched.status, JSON.stringify(patched.body)).to.equal(200);
    try {
      const { strong } = await withFactor();
      t.clock.advanceSeconds(61);
      expectMfaRequired(await http.post('/auth/mfa/recovery-codes', undefined, bearer(strong)));
    } finally {
      await http.patch('/api/rest/_environment', { mfaReauthSeconds: 900 }, manage);
    }
  });

  it('the first factor may be enrolled at aal1 (with recovery codes); then that aal1 token adds no other', async () => {
    const a = await signUpAndConfirm(t, http);
    const one = await http.post('/auth/mfa/totp/enroll', { name: 'one' }, bearer(a.accessToken));
    expect(one.status).to.equal(200);
    const code = totp(one.body.secret, t.clock.now());
    const verify = await http.post('/auth/mfa/totp/verify', { factorId: one.body.factorId, code }, bearer(a.accessToken));
    expect(verify.status, JSON.stringify(verify.body)).to.equal(200);
    expect(verify.body.recoveryCodes).to.have.length(10);
    expectMfaRequired(await http.post('/auth/mfa/totp/enroll', { name: 'two' }, bearer(a.accessToken)));
  });

  it('a wrong second factor at the MFA step is an audit event user.mfa_failed (method otp or recovery), never with the code', async () => {
    const { a, factorId } = await withFactor();
    const step = await http.post('/auth/login', { email: a.email, password: PASSWORD });
    const wrongTotp = await http.post('/auth/mfa/challenge', { mfaToken: step.body.mfaToken, factorId, code: '000000' });
    expect(wrongTotp.body.error).to.equal('AUTH_INVALID_CODE');
    const wrongRecovery = await http.post('/auth/mfa/challenge', { mfaToken: step.body.mfaToken, code: 'abcde-fghjk' });
    expect(wrongRecovery.body.error).to.equal('AUTH_INVALID_CODE');
    const events = await http.get(`/api/rest/_users/${a.userId}/events?type=user.mfa_failed`, manage);
    expect(events.status, JSON.stringify(events.body)).to.equal(200);
    const failed = events.body.events as Array<{ type: string; details: Record<string, unknown> }>;
    expect(failed.map((e) => e.details.method).sort()).to.deep.equal(['otp', 'recovery']);
    expect(JSON.stringify(failed)).not.to.include('000000').and.not.to.include('abcde');
  });
});
