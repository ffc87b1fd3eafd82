import { expect } from 'chai';
import type { TestApi } from '../../support/api.js';
import type { HttpClient } from '../../support/http.js';
import { codeIn } from '../../support/smtp.js';
import { bearer, PASSWORD, signUpAndConfirm, startAuthApi, uniqueEmail } from '../support.js';
import { claimsOf, enrolTotp, gql, totp } from './support.js';

// Issue 36, finding 2: confirm-signup started a session with neither password nor second factor,
// recorded as a password (amr ["pwd"]). Now it ends through the MFA step like every sign-in, its
// amr says what the code proved (["email"]), and a code for an address that is verified already
// is refused exactly like a wrong code.

describe('auth mfa: confirm-signup goes through the same gate as a login', function () {
  this.timeout(60_000);
  let t: TestApi;
  let http: HttpClient;
  let manage: ReturnType<typeof bearer>;

  before(async () => {
    t = await startAuthApi();
    ({ http } = await t.provision({ projectId: 'gate', name: 'master' }));
    manage = bearer(await t.managementToken('gate'));
  });
  after(() => t.close());

  const sessionsOf = async (userId: string) =>
    (await t.ctx.pool.query('SELECT count(*)::int AS n FROM walgate.sessions WHERE user_id = $1', [userId])).rows[0].n as number;

  const setVerified = async (userId: string, emailVerified: boolean) => {
    const res = await http.patch(`/api/rest/_users/${userId}`, { emailVerified }, manage);
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
  };

  /** Asks for a new signup code and reads it from the real SMTP server. */
  const newSignupCode = async (email: string) => {
    const before = t.smtp.to(email).length;
    expect((await http.post('/auth/resend-confirmation', { email })).status).to.equal(200);
    return codeIn(await t.smtp.waitFor(email, { after: before }));
  };

  it('a plain confirmation: a pair whose amr is ["email"] (aal1), never "pwd"', async () => {
    const a = await signUpAndConfirm(t, http);
    expect(claimsOf(a.accessToken)).to.deep.include({ amr: ['email'], aal: 'aal1' });
  });

  it('confirm-signup after an operator verified the address: refused exactly like a wrong code, no tokens, no session', async () => {
    const email = uniqueEmail('preverified');
    const signup = await http.post('/auth/signup', { email, password: PASSWORD });
    expect(signup.status).to.equal(201);
    const code = codeIn(await t.smtp.waitFor(email));
    await setVerified(signup.body.userId, true);

    const refused = await http.post('/auth/confirm-signup', { email, code });
    const wrong = await http.post('/auth/confirm-signup', { email, code: code === '000000' ? '111111' : '000000' });
    expect(refused.status).to.equal(400);
    expect(refused.body).to.deep.equal(wrong.body);
    expect(refused.body.error).to.equal('AUTH_INVALID_CODE');
    expect(refused.body).not.to.have.any.keys('accessToken', 'refreshToken', 'deviceToken', 'mfaToken');
    expect(await sessionsOf(signup.body.userId)).to.equal(0);
    // The password still signs in, as for any verified user.
    expect((await http.post('/auth/login', { email, password: PASSWORD })).status).to.equal(200);
  });

  it('a user with a factor whose address an operator unverified: confirm-signup answers mfaRequired, never a pair; the factor finishes it (amr email + otp)', async () => {
    const a = await signUpAndConfirm(t, http);
    const { factorId, secret } = await enrolTotp(t, http, a);
    await setVerified(a.userId, false);
    const sessionsBefore = await sessionsOf(a.userId);

    const step = await http.post('/auth/confirm-signup', { email: a.email, code: await newSignupCode(a.email) });
    expect(step.status, JSON.stringify(step.body)).to.equal(200);
    expect(step.body).to.include({ mfaRequired: true });
    expect(step.body.mfaToken).to.be.a('string');
    expect(step.body.factors).to.deep.equal([{ id: factorId, type: 'totp' }]);
    expect(step.body).not.to.have.any.keys('accessToken', 'refreshToken', 'deviceToken', 'user');
    expect(await sessionsOf(a.userId)).to.equal(sessionsBefore);

    t.clock.advanceSeconds(30);
    const pair = await http.post('/auth/mfa/challenge', { mfaToken: step.body.mfaToken, factorId, code: totp(secret, t.clock.now()) });
    expect(pair.status, JSON.stringify(pair.body)).to.equal(200);
    expect(claimsOf(pair.body.accessToken)).to.deep.include({ amr: ['email', 'otp'], aal: 'aal2' });
  });

  it('GraphQL confirmSignup answers the same MFA step for such a user', async () => {
    const a = await signUpAndConfirm(t, http);
    const { factorId } = await enrolTotp(t, http, a);
    await setVerified(a.userId, false);
    const res = await gql(
      http,
      'mutation ($input: ConfirmSignupInput!) { confirmSignup(input: $input) { accessToken refreshToken mfaRequired mfaToken factors { id type } } }',
      { input: { email: a.email, code: await newSignupCode(a.email) } },
    );
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    expect(res.body.errors).to.equal(undefined);
    expect(res.body.data.confirmSignup).to.deep.include({ accessToken: null, refreshToken: null, mfaRequired: true });
    expect(res.body.data.confirmSignup.factors).to.deep.equal([{ id: factorId, type: 'totp' }]);
  });
});
