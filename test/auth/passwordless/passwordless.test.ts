import { expect } from 'chai';
import type { TestApi } from '../../support/api.js';
import { HttpClient } from '../../support/http.js';
import { codeIn, type ReceivedMail } from '../../support/smtp.js';
import { claimsOf, enrolTotp, gql, totp } from '../mfa/support.js';
import { startTestApi } from '../../support/api.js';
import { bearer, GENEROUS_LIMITS, signUpAndConfirm, startAuthApi, uniqueEmail, type Account } from '../support.js';

// Passwordless sign-in as a user meets it: the code and the link arrive through the real SMTP
// server, sign the user in once, expire, run out of guesses, lead only to allowed pages, answer
// an unknown address like a known one, and end with the MFA step for a user with a second factor.

const WELCOME = 'https://app.example.com/welcome';

describe('auth passwordless: e-mailed codes and magic links', function () {
  this.timeout(60_000);
  let t: TestApi;
  let http: HttpClient;
  let admin: HttpClient;
  let staging: HttpClient;
  let a: Account;

  const askCode = async (email: string) => {
    const before = t.smtp.to(email).length;
    const r = await http.post('/auth/otp', { email });
    expect(r.status, JSON.stringify(r.body)).to.equal(200);
    return codeIn(await t.smtp.waitFor(email, { after: before }));
  };
  const askLink = async (email: string, client = http): Promise<ReceivedMail> => {
    const before = t.smtp.to(email).length;
    const r = await client.post('/auth/magic-link', { email, redirectTo: WELCOME });
    expect(r.status, JSON.stringify(r.body)).to.equal(200);
    return t.smtp.waitFor(email, { after: before });
  };
  const linkOf = (mail: ReceivedMail) => new URL(/https:\/\/app\.example\.com\/welcome\?[^\s"<]+/.exec(mail.text)![0]);
  const eventsOf = async (userId: string) => ((await admin.get(`/api/rest/_users/${userId}/events`)).body.events as any[]).reverse();

  before(async () => {
    // This file asks for many codes from one address: the per-client limit is the next describe's subject.
    t = await startAuthApi({
      overrides: {
        rateLimits: { ...GENEROUS_LIMITS, recoverPasswordPerIp: { name: 'recover-password-ip', points: 10_000, durationSeconds: 60 } },
      },
    });
    ({ http } = await t.provision({ projectId: 'pwl', name: 'master' }));
    ({ http: staging } = await t.provision({ projectId: 'pwl', name: 'staging' }));
    const token = await t.managementToken('pwl');
    admin = new HttpClient(t.url, { authorization: `Bearer ${token}`, 'x-project-id': 'pwl', environment: 'master' });
    const on = await admin.patch('/api/rest/_environment', { passwordless: { enabled: true, redirectUrls: [WELCOME] } });
    expect(on.status, JSON.stringify(on.body)).to.equal(200);
    expect(on.body.passwordless).to.deep.equal({ enabled: true, signUp: false, redirectUrls: [WELCOME] });
    a = await signUpAndConfirm(t, http);
  });
  after(() => t.close());

  it('off by default: every passwordless route of an environment that did not turn it on is 403 AUTH_PASSWORDLESS_DISABLED', async () => {
    const calls: Array<[string, unknown]> = [
      ['/auth/otp', { email: a.email }],
      ['/auth/otp/verify', { email: a.email, code: '123456' }],
      ['/auth/magic-link', { email: a.email, redirectTo: WELCOME }],
      ['/auth/magic-link/verify', { token: 'x'.repeat(43) }],
    ];
    for (const [path, body] of calls) {
      const r = await staging.post(path, body);
      expect(r.status, path).to.equal(403);
      expect(r.body.error, path).to.equal('AUTH_PASSWORDLESS_DISABLED');
    }
  });

  it('an e-mailed code (in the subject) signs in once: a token pair with amr otp, a device token, audit rows', async () => {
    const code = await askCode(a.email);
    const mail = t.smtp.to(a.email).at(-1)!;
    expect(mail.subject).to.equal(`Your sign-in code: ${code}`);
    const r = await http.post('/auth/otp/verify', { email: a.email, code });
    expect(r.status, JSON.stringify(r.body)).to.equal(200);
    expect(r.body).to.include.keys('accessToken', 'refreshToken', 'tokenType', 'expiresIn', 'deviceToken');
    const claims = claimsOf(r.body.accessToken);
    expect(claims.amr).to.include('otp');
    expect(claims).to.include({ sub: a.userId, aal: 'aal1' });
    expect((await http.get('/auth/me', bearer(r.body.accessToken))).body.user.id).to.equal(a.userId);

    const reused = await http.post('/auth/otp/verify', { email: a.email, code });
    expect(reused.status).to.equal(400);
    expect(reused.body.error).to.equal('AUTH_INVALID_CODE');

    const types = (await eventsOf(a.userId)).map((e) => e.type);
    expect(types.slice(-2)).to.deep.equal(['user.passwordless_requested', 'user.logged_in']);
    const [requested, loggedIn] = (await eventsOf(a.userId)).slice(-2);
    expect(requested.details).to.deep.equal({ method: 'otp' });
    expect(loggedIn.details).to.deep.equal({ amr: ['otp', 'email'] });
    expect(JSON.stringify(await eventsOf(a.userId))).to.not.include(code);
  });

  it('five wrong guesses use up the code: the right one is refused after them; a new code comes with new guesses', async () => {
    const code = await askCode(a.email);
    const wrong = code === '000000' ? '111111' : '000000';
    for (let i = 0; i < 5; i++) {
      const r = await http.post('/auth/otp/verify', { email: a.email, code: wrong });
      expect(r.status).to.equal(400);
      expect(r.body.error).to.equal('AUTH_INVALID_CODE');
    }
    expect((await http.post('/auth/otp/verify', { email: a.email, code })).status).to.equal(400);
    const fresh = await askCode(a.email);
    expect((await http.post('/auth/otp/verify', { email: a.email, code: fresh })).status).to.equal(200);
  });

  it('a code and a link expire with the code lifetime (10 minutes)', async () => {
    const code = await askCode(a.email);
    const link = linkOf(await askLink(a.email));
    t.clock.advanceSeconds(601);
    const late = await http.post('/auth/otp/verify', { email: a.email, code });
    expect(late.status).to.equal(400);
    expect(late.body.error).to.equal('AUTH_INVALID_CODE');
    const lateLink = await http.post('/auth/magic-link/verify', { token: link.searchParams.get('token') });
    expect(lateLink.status).to.equal(400);
    expect(lateLink.body.error).to.equal('AUTH_INVALID_CODE');
  });

  it('a magic link leads to the allowed page with a single-use token that signs in (amr email), once, in its own environment only', async () => {
    const mail = await askLink(a.email);
    expect(mail.subject).to.equal('Your sign-in link');
    const link = linkOf(mail);
    expect(link.origin + link.pathname).to.equal(WELCOME);
    const token = link.searchParams.get('token')!;
    expect(token).to.have.length.above(40);
    expect(mail.subject).to.not.include(token);

    // Another environment of the same project (passwordless on there too) does not know the token.
    await admin.with({ environment: 'staging' }).patch('/api/rest/_environment', { passwordless: { enabled: true } });
    const elsewhere = await staging.post('/auth/magic-link/verify', { token });
    expect(elsewhere.status).to.equal(400);
    await admin.with({ environment: 'staging' }).patch('/api/rest/_environment', { passwordless: { enabled: false } });

    const r = await http.post('/auth/magic-link/verify', { token });
    expect(r.status, JSON.stringify(r.body)).to.equal(200);
    expect(claimsOf(r.body.accessToken)).to.deep.include({ sub: a.userId, amr: ['email'], aal: 'aal1' });
    const again = await http.post('/auth/magic-link/verify', { token });
    expect(again.status).to.equal(400);
    expect(again.body.error).to.equal('AUTH_INVALID_CODE');
    expect(again.body.message).to.match(/link/);

    // A newer link replaces the older one.
    const first = linkOf(await askLink(a.email)).searchParams.get('token');
    const second = linkOf(await askLink(a.email)).searchParams.get('token');
    expect((await http.post('/auth/magic-link/verify', { token: first })).status).to.equal(400);
    expect((await http.post('/auth/magic-link/verify', { token: second })).status).to.equal(200);
  });

  it('a redirectTo not on the allow-list (exact match) is refused for any address, and nothing is mailed', async () => {
    for (const redirectTo of [
      'https://evil.example.com/welcome',
      `${WELCOME}/`,
      `${WELCOME}?next=/x`,
      'https://app.example.com',
      'javascript:alert(1)',
    ]) {
      for (const email of [a.email, uniqueEmail('nobody')]) {
        const r = await http.post('/auth/magic-link', { email, redirectTo });
        expect(r.status, redirectTo).to.equal(400);
        expect(r.body.error).to.equal('AUTH_REDIRECT_NOT_ALLOWED');
      }
    }
    const before = t.smtp.to(a.email).length;
    await askCode(a.email); // the next mail to the address is the code's, not a link
    expect(
      t.smtp
        .to(a.email)
        .slice(before)
        .map((m) => m.subject),
    ).to.have.length(1);
  });

  it('an unknown address is answered with the same body, in about the same time, and gets no mail and no account', async () => {
    const nobody = uniqueEmail('nobody');
    const known = await http.post('/auth/otp', { email: a.email });
    const unknown = await http.post('/auth/otp', { email: nobody });
    expect(unknown.status).to.equal(known.status);
    expect(unknown.body).to.deep.equal(known.body);
    const knownLink = await http.post('/auth/magic-link', { email: a.email, redirectTo: WELCOME });
    const unknownLink = await http.post('/auth/magic-link', { email: nobody, redirectTo: WELCOME });
    expect(unknownLink.body).to.deep.equal(knownLink.body);

    const median = (xs: number[]) => xs.sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;
    const time = async (email: string) => {
      const start = process.hrtime.bigint();
      expect((await http.post('/auth/otp', { email })).status).to.equal(200);
      return Number(process.hrtime.bigint() - start) / 1e6;
    };
    const k: number[] = [];
    const u: number[] = [];
    for (let i = 0; i < 15; i++) {
      k.push(await time(a.email));
      u.push(await time(uniqueEmail('nobody')));
    }
    const [mk, mu] = [median(k), median(u)];
    // Generous (the machine is shared): the answer comes before the address is looked up at all.
    expect(Math.abs(mk - mu), `known ${mk.toFixed(1)} ms, unknown ${mu.toFixed(1)} ms`).to.be.below(Math.max(5, 0.5 * Math.max(mk, mu)));

    const wrong = await http.post('/auth/otp/verify', { email: nobody, code: '123456' });
    expect(wrong.status).to.equal(400);
    expect(wrong.body.error).to.equal('AUTH_INVALID_CODE');
    await new Promise((resolve) => setTimeout(resolve, 300)); // the after-answer work has run
    expect(t.smtp.to(nobody)).to.have.length(0);
    const { rowCount } = await t.ctx.pool.query('SELECT 1 FROM walgate.users WHERE email = $1', [nobody]);
    expect(rowCount).to.equal(0);
  });

  it('with signUp on, an unknown address gets a code and, with it, a confirmed account without a password', async () => {
    await admin.patch('/api/rest/_environment', { passwordless: { enabled: true, signUp: true, redirectUrls: [WELCOME] } });
    try {
      const email = uniqueEmail('newcomer');
      const code = await askCode(email);
      const r = await http.post('/auth/otp/verify', { email, code });
      expect(r.status, JSON.stringify(r.body)).to.equal(200);
      const me = await http.get('/auth/me', bearer(r.body.accessToken));
      expect(me.body.user).to.include({ email, emailVerified: true });
      const types = (await eventsOf(me.body.user.id)).map((e) => e.type);
      expect(types).to.deep.equal(['user.signed_up', 'user.passwordless_requested', 'user.email_verified', 'user.logged_in']);
      const { rows } = await t.ctx.pool.query('SELECT has_password FROM walgate.users WHERE email = $1', [email]);
      expect(rows[0].has_password, 'no password of their own').to.equal(false);
    } finally {
      await admin.patch('/api/rest/_environment', { passwordless: { enabled: true, signUp: false, redirectUrls: [WELCOME] } });
    }
  });

  it('a user with a second factor gets the MFA step after a right code or link, then aal2', async () => {
    const b = await signUpAndConfirm(t, http);
    const factor = await enrolTotp(t, http, b);
    t.clock.advanceSeconds(30);
    const code = await askCode(b.email);
    const step = await http.post('/auth/otp/verify', { email: b.email, code });
    expect(step.status, JSON.stringify(step.body)).to.equal(200);
    expect(step.body).to.have.all.keys('mfaRequired', 'mfaToken', 'factors', 'deviceToken');
    const pair = await http.post('/auth/mfa/challenge', {
      mfaToken: step.body.mfaToken,
      factorId: factor.factorId,
      code: totp(factor.secret, t.clock.now()),
    });
    expect(pair.status, JSON.stringify(pair.body)).to.equal(200);
    expect(claimsOf(pair.body.accessToken)).to.deep.include({ amr: ['otp', 'email', 'otp'], aal: 'aal2' });

    const viaLink = await http.post('/auth/magic-link/verify', { token: linkOf(await askLink(b.email)).searchParams.get('token') });
    expect(viaLink.body.mfaRequired).to.equal(true);
  });

  it('GraphQL twins: sendOtp and verifyOtp, sendMagicLink and verifyMagicLink, with the REST errors', async () => {
    const before = t.smtp.to(a.email).length;
    const sent = await gql(http, 'mutation($i: SendOtpInput!) { sendOtp(input: $i) { message } }', { i: { email: a.email } });
    expect(sent.body.data.sendOtp.message).to.match(/code/);
    const code = codeIn(await t.smtp.waitFor(a.email, { after: before }));
    const signed = await gql(http, 'mutation($i: VerifyOtpInput!) { verifyOtp(input: $i) { accessToken deviceToken mfaRequired } }', {
      i: { email: a.email, code },
    });
    expect(claimsOf(signed.body.data.verifyOtp.accessToken).amr).to.include('otp');
    const reused = await gql(http, 'mutation($i: VerifyOtpInput!) { verifyOtp(input: $i) { accessToken } }', {
      i: { email: a.email, code },
    });
    expect(reused.body.errors[0].extensions.code).to.equal('AUTH_INVALID_CODE');

    const refused = await gql(http, 'mutation($i: SendMagicLinkInput!) { sendMagicLink(input: $i) { message } }', {
      i: { email: a.email, redirectTo: 'https://evil.example.com/' },
    });
    expect(refused.body.errors[0].extensions.code).to.equal('AUTH_REDIRECT_NOT_ALLOWED');
    const linkBefore = t.smtp.to(a.email).length;
    await gql(http, 'mutation($i: SendMagicLinkInput!) { sendMagicLink(input: $i) { message } }', {
      i: { email: a.email, redirectTo: WELCOME },
    });
    const token = linkOf(await t.smtp.waitFor(a.email, { after: linkBefore })).searchParams.get('token');
    const viaLink = await gql(http, 'mutation($i: VerifyMagicLinkInput!) { verifyMagicLink(input: $i) { accessToken } }', { i: { token } });
    expect(claimsOf(viaLink.body.data.verifyMagicLink.accessToken).amr).to.deep.equal(['email']);
  });
});

describe('auth passwordless: the per-client limits are recovery’s, counted apart', function () {
  this.timeout(60_000);
  let t: TestApi;
  let http: HttpClient;

  before(async () => {
    t = await startTestApi(); // the environment's default limits
    ({ http } = await t.provision({ projectId: 'pwl-limits', name: 'master' }));
    const admin = new HttpClient(t.url, { authorization: `Bearer ${await t.managementToken('pwl-limits')}`, 'x-project-id': 'pwl-limits' });
    await admin.patch(
      '/api/rest/_environment',
      { passwordless: { enabled: true, redirectUrls: [WELCOME] } },
      { headers: { environment: 'master' } },
    );
  });
  after(() => t.close());

  it('5 codes a minute per address (then 429 with Retry-After); links and password recovery have their own count', async () => {
    const email = uniqueEmail('limited');
    for (let i = 0; i < 5; i++) expect((await http.post('/auth/otp', { email })).status).to.equal(200);
    const sixth = await http.post('/auth/otp', { email });
    expect(sixth.status).to.equal(429);
    expect(sixth.body.error).to.equal('RATE_LIMIT_EXCEEDED');
    expect(Number(sixth.headers.get('retry-after'))).to.be.within(1, 60);
    expect((await http.post('/auth/magic-link', { email, redirectTo: WELCOME })).status).to.equal(200);
    expect((await http.post('/auth/recover-password', { email })).status).to.equal(200);
  });
});
