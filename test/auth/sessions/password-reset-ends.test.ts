import { expect } from 'chai';
import type { TestApi } from '../../support/api.js';
import type { HttpClient } from '../../support/http.js';
import { codeIn } from '../../support/smtp.js';
import { enrolTotp, totp } from '../mfa/support.js';
import { PASSWORD, signUpAndConfirm, startAuthApi, type Account } from '../support.js';

// Issue 36, finding 3: a password reset ends everything the old password earned — sessions (as
// before), MFA steps begun with it (mfaTokens), and device tokens issued before it, which also
// expire on their own (setting deviceTokenTtlSeconds, 90 days).

describe('auth sessions: a password reset ends what the old password earned', function () {
  this.timeout(90_000);
  let t: TestApi;
  let http: HttpClient;

  before(async () => {
    // One proxy in front (the test): X-Forwarded-For's last entry is the client.
    t = await startAuthApi({ env: { TRUST_PROXY: '1' } });
    ({ http } = await t.provision({ projectId: 'reset', name: 'master' }));
  });
  after(() => t.close());

  const from = (ip: string, headers: Record<string, string> = {}) => ({ headers: { 'x-forwarded-for': ip, ...headers } });
  const NEW_PASSWORD = `${PASSWORD} and a new one`;

  async function resetPassword(a: Account, newPassword = NEW_PASSWORD) {
    const before = t.smtp.to(a.email).length;
    await http.post('/auth/recover-password', { email: a.email }, from('198.51.100.1'));
    const code = codeIn(await t.smtp.waitFor(a.email, { after: before }));
    const reset = await http.post('/auth/reset-password', { email: a.email, code, newPassword }, from('198.51.100.1'));
    expect(reset.status, JSON.stringify(reset.body)).to.equal(200);
  }

  /** 11 addresses x 5 wrong passwords: the account is locked for every client without a (good) device token. */
  async function lockAccount(a: Account, net: number) {
    for (let i = 0; i < 11; i++) {
      for (let j = 0; j < 5; j++)
        await http.post('/auth/login', { email: a.email, password: 'wrong password here' }, from(`203.0.${net}.${i + 1}`));
    }
    const stranger = await http.post('/auth/login', { email: a.email, password: a.password }, from(`192.0.2.${net}`));
    expect(stranger.status).to.equal(423);
  }

  it('an mfaToken issued before the reset is refused after it, even with a right code', async () => {
    const a = await signUpAndConfirm(t, http);
    const { factorId, secret } = await enrolTotp(t, http, a);
    const step = await http.post('/auth/login', { email: a.email, password: PASSWORD }, from('198.51.100.2'));
    expect(step.body.mfaRequired).to.equal(true);
    await resetPassword(a);
    t.clock.advanceSeconds(30);
    const late = await http.post('/auth/mfa/challenge', { mfaToken: step.body.mfaToken, factorId, code: totp(secret, t.clock.now()) });
    expect(late.status, JSON.stringify(late.body)).to.equal(401);
    expect(late.body.error).to.equal('AUTH_TOKEN_INVALID');
    expect(late.body).not.to.have.property('accessToken');
    // A step begun with the new password works.
    const fresh = await http.post('/auth/login', { email: a.email, password: NEW_PASSWORD }, from('198.51.100.2'));
    const pair = await http.post('/auth/mfa/challenge', { mfaToken: fresh.body.mfaToken, factorId, code: totp(secret, t.clock.now()) });
    expect(pair.status, JSON.stringify(pair.body)).to.equal(200);
  });

  it('a device token issued before the reset no longer exempts from the account lock; one issued after it does', async () => {
    const a = await signUpAndConfirm(t, http);
    const old = await http.post('/auth/login', { email: a.email, password: PASSWORD }, from('198.51.100.3'));
    const oldDevice: string = old.body.deviceToken;
    t.clock.advanceSeconds(1);
    await resetPassword(a);
    t.clock.advanceSeconds(1);
    const fresh = await http.post('/auth/login', { email: a.email, password: NEW_PASSWORD }, from('198.51.100.4'));
    expect(fresh.status).to.equal(200);
    const newDevice: string = fresh.body.deviceToken;
    expect(newDevice).not.to.equal(oldDevice);

    await lockAccount({ ...a, password: NEW_PASSWORD }, 115);
    const withOld = await http.post(
      '/auth/login',
      { email: a.email, password: NEW_PASSWORD },
      from('192.0.2.210', { 'x-device-token': oldDevice }),
    );
    expect(withOld.status, JSON.stringify(withOld.body)).to.equal(423);
    const withNew = await http.post(
      '/auth/login',
      { email: a.email, password: NEW_PASSWORD },
      from('192.0.2.211', { 'x-device-token': newDevice }),
    );
    expect(withNew.status, JSON.stringify(withNew.body)).to.equal(200);
  });

  it('a device token expires after deviceTokenTtlSeconds (90 days by default)', async () => {
    const a = await signUpAndConfirm(t, http);
    const login = await http.post('/auth/login', { email: a.email, password: PASSWORD }, from('198.51.100.5'));
    const device: string = login.body.deviceToken;
    t.clock.advanceSeconds(90 * 86_400 + 1);
    await lockAccount(a, 116);
    const expired = await http.post(
      '/auth/login',
      { email: a.email, password: PASSWORD },
      from('192.0.2.212', { 'x-device-token': device }),
    );
    expect(expired.status, JSON.stringify(expired.body)).to.equal(423);
  });
});
