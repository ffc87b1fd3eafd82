import { expect } from 'chai';
import type { TestApi } from '../../support/api.js';
import type { HttpClient } from '../../support/http.js';
import { codeIn } from '../../support/smtp.js';
import { enrolTotp } from '../mfa/support.js';
import { PASSWORD, signUpAndConfirm, startAuthApi, uniqueEmail } from '../support.js';

// What a stranger can do to someone else's account: lock it, block its recovery, kill its signup
// code. The owner's known device keeps logging in; the owner's fresh codes work; a new signup
// code can always be asked for.

describe('auth sessions: strangers cannot lock out or block the owner', () => {
  let t: TestApi;
  let http: HttpClient;

  before(async () => {
    // One proxy in front (the test): X-Forwarded-For's last entry is the client.
    t = await startAuthApi({ env: { TRUST_PROXY: '1' } });
    ({ http } = await t.provision({ projectId: 'strangers', name: 'master' }));
  });
  after(() => t.close());

  const from = (ip: string, headers: Record<string, string> = {}) => ({ headers: { 'x-forwarded-for': ip, ...headers } });

  it("11 addresses x 5 wrong passwords: the owner's known device logs in, a new client gets 423", async () => {
    const a = await signUpAndConfirm(t, http);
    const known = await http.post('/auth/login', { email: a.email, password: PASSWORD }, from('198.51.100.7'));
    expect(known.status).to.equal(200);
    const deviceToken: string = known.body.deviceToken;
    for (let i = 0; i < 11; i++) {
      for (let j = 0; j < 5; j++)
        await http.post('/auth/login', { email: a.email, password: 'wrong password here' }, from(`203.0.113.${i + 1}`));
    }
    const stranger = await http.post('/auth/login', { email: a.email, password: PASSWORD }, from('192.0.2.99'));
    expect(stranger.status).to.equal(423);
    expect(stranger.body.lockedUntil).to.be.a('string');
    // The owner, from yet another address, with the device token of the earlier login.
    const owner = await http.post(
      '/auth/login',
      { email: a.email, password: PASSWORD },
      from('192.0.2.200', { 'x-device-token': deviceToken }),
    );
    expect(owner.status, JSON.stringify(owner.body)).to.equal(200);
    // The confirmation's device token is as good as a login's.
    const fromSignup = await http.post(
      '/auth/login',
      { email: a.email, password: PASSWORD },
      from('192.0.2.201', { 'x-device-token': a.deviceToken }),
    );
    expect(fromSignup.status).to.equal(200);
  });

  it('a user with a second factor: the MFA step carries a device token, and with it the owner still gets the step after strangers lock the account', async () => {
    const a = await signUpAndConfirm(t, http);
    await enrolTotp(t, http, a);
    const step = await http.post('/auth/login', { email: a.email, password: PASSWORD }, from('198.51.100.17'));
    expect(step.status).to.equal(200);
    expect(step.body).to.include({ mfaRequired: true });
    expect(step.body).not.to.have.property('accessToken');
    const deviceToken: string = step.body.deviceToken;
    expect(deviceToken).to.be.a('string');
    for (let i = 0; i < 11; i++) {
      for (let j = 0; j < 5; j++)
        await http.post('/auth/login', { email: a.email, password: 'wrong password here' }, from(`203.0.114.${i + 1}`));
    }
    expect((await http.post('/auth/login', { email: a.email, password: PASSWORD }, from('192.0.2.98'))).status).to.equal(423);
    const owner = await http.post(
      '/auth/login',
      { email: a.email, password: PASSWORD },
      from('192.0.2.202', { 'x-device-token': deviceToken }),
    );
    expect(owner.status, JSON.stringify(owner.body)).to.equal(200);
    expect(owner.body).to.include({ mfaRequired: true, deviceToken });
  });

  it("a device token is judged by its own failures, and another account's device token counts for nothing", async () => {
    const a = await signUpAndConfirm(t, http);
    const b = await signUpAndConfirm(t, http);
    for (let i = 0; i < 5; i++) {
      await http.post(
        '/auth/login',
        { email: a.email, password: 'wrong password here' },
        from('198.51.100.50', { 'x-device-token': a.deviceToken }),
      );
    }
    const lockedDevice = await http.post(
      '/auth/login',
      { email: a.email, password: PASSWORD },
      from('198.51.100.51', { 'x-device-token': a.deviceToken }),
    );
    expect(lockedDevice.status).to.equal(423);
    // b's token, or a forged one, on a's account: an unknown client, judged by its own (clean) address.
    const foreign = await http.post(
      '/auth/login',
      { email: a.email, password: PASSWORD },
      from('198.51.100.52', { 'x-device-token': b.deviceToken }),
    );
    expect(foreign.status).to.equal(200);
    const forged = await http.post(
      '/auth/login',
      { email: a.email, password: PASSWORD },
      from('198.51.100.53', { 'x-device-token': `${a.deviceToken}x` }),
    );
    expect(forged.status).to.equal(200);
  });

  it("recovery: a stranger's wrong reset codes over two minutes do not stop the owner's fresh code", async () => {
    const a = await signUpAndConfirm(t, http);
    await http.post('/auth/recover-password', { email: a.email }, from('203.0.113.66'));
    await t.smtp.waitFor(a.email, { after: 1 });
    for (let minute = 0; minute < 2; minute++) {
      for (let i = 0; i < 10; i++) {
        const guess = await http.post(
          '/auth/reset-password',
          { email: a.email, code: String(100000 + i), newPassword: 'whatever long passphrase 1' },
          from('203.0.113.66'),
        );
        expect([400, 429]).to.include(guess.status);
      }
      t.clock.advanceSeconds(61);
    }
    const before = t.smtp.to(a.email).length;
    expect((await http.post('/auth/recover-password', { email: a.email }, from('198.51.100.8'))).status).to.equal(200);
    const code = codeIn(await t.smtp.waitFor(a.email, { after: before }));
    const reset = await http.post(
      '/auth/reset-password',
      { email: a.email, code, newPassword: 'the owner chose this passphrase 9' },
      from('198.51.100.8'),
    );
    expect(reset.status, JSON.stringify(reset.body)).to.equal(200);
  });

  it("signup: after a stranger's 5 wrong codes, resend-confirmation mails a new code that confirms", async () => {
    const email = uniqueEmail('resend');
    expect((await http.post('/auth/signup', { email, password: PASSWORD }, from('198.51.100.9'))).status).to.equal(201);
    await t.smtp.waitFor(email, { after: 0 });
    for (let i = 0; i < 5; i++) await http.post('/auth/confirm-signup', { email, code: String(200000 + i) }, from('203.0.113.77'));
    const before = t.smtp.to(email).length;
    const resend = await http.post('/auth/resend-confirmation', { email }, from('198.51.100.9'));
    expect(resend.status).to.equal(200);
    const code = codeIn(await t.smtp.waitFor(email, { after: before }));
    const confirm = await http.post('/auth/confirm-signup', { email, code }, from('198.51.100.9'));
    expect(confirm.status, JSON.stringify(confirm.body)).to.equal(200);
    expect(confirm.body.deviceToken).to.be.a('string');
  });

  it('resend-confirmation answers the same for a confirmed, an unknown and a pending address, and mails only the pending one', async () => {
    const confirmed = await signUpAndConfirm(t, http);
    const ghost = uniqueEmail('ghost');
    const pending = uniqueEmail('pending');
    await http.post('/auth/signup', { email: pending, password: PASSWORD }, from('198.51.100.10'));
    await t.smtp.waitFor(pending, { after: 0 });
    const mailsBefore = t.smtp.to(confirmed.email).length;
    const answers = [];
    for (const email of [confirmed.email, ghost, pending])
      answers.push(await http.post('/auth/resend-confirmation', { email }, from('198.51.100.10')));
    expect(answers.map((r) => r.status)).to.deep.equal([200, 200, 200]);
    expect(answers[0]!.body).to.deep.equal(answers[1]!.body).and.to.deep.equal(answers[2]!.body);
    // The pending address's mail, queued last, has arrived: the others would have been sent before it.
    await t.smtp.waitFor(pending, { after: 1 });
    expect(t.smtp.to(confirmed.email).length).to.equal(mailsBefore);
    expect(t.smtp.to(ghost).length).to.equal(0);
  });
});
