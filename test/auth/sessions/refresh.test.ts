import { expect } from 'chai';
import type { TestApi } from '../../support/api.js';
import type { HttpClient } from '../../support/http.js';
import { codeIn } from '../../support/smtp.js';
import { authEvents, bearer, PASSWORD, signUpAndConfirm, startAuthApi } from '../support.js';

// Refresh as clients live it: concurrent tabs and retries get working pairs within the grace;
// reuse after it ends the session; harmless clients never raise the leak alert; a logged-out
// access token stays refused until it expires, clock-skew grace included.

describe('auth sessions: refresh reuse grace and revocation lifetime', () => {
  let t: TestApi;
  let http: HttpClient;

  before(async () => {
    t = await startAuthApi();
    ({ http } = await t.provision({ projectId: 'refresh', name: 'master' }));
  });
  after(() => t.close());

  it('a password login gives tokens with amr ["pwd"] and aal1, and a refresh keeps them', async () => {
    const a = await signUpAndConfirm(t, http);
    const login = await http.post('/auth/login', { email: a.email, password: PASSWORD });
    expect(login.status).to.equal(200);
    const claims = (token: string) => JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString());
    expect(claims(login.body.accessToken)).to.include({ aal: 'aal1' });
    expect(claims(login.body.accessToken).amr).to.deep.equal(['pwd']);
    const refreshed = await http.post('/auth/refresh-token', { refreshToken: login.body.refreshToken });
    expect(refreshed.status).to.equal(200);
    expect(claims(refreshed.body.accessToken).amr).to.deep.equal(['pwd']);
    expect(claims(refreshed.body.accessToken).aal).to.equal('aal1');
  });

  it('10 concurrent refreshes of one token: 10 x 200, every pair works; after the grace the token and the whole session are refused', async () => {
    const a = await signUpAndConfirm(t, http);
    const answers = await Promise.all(Array.from({ length: 10 }, () => http.post('/auth/refresh-token', { refreshToken: a.refreshToken })));
    expect(answers.map((r) => r.status)).to.deep.equal(Array(10).fill(200));
    for (const r of answers) expect((await http.get('/auth/me', bearer(r.body.accessToken))).status).to.equal(200);
    // Each returned refresh token works too (one of them, exchanged once, is enough to show it).
    const onward = await http.post('/auth/refresh-token', { refreshToken: answers[3]!.body.refreshToken });
    expect(onward.status).to.equal(200);

    t.clock.advanceSeconds(t.config.refreshReuseGraceSeconds + 1);
    const late = await http.post('/auth/refresh-token', { refreshToken: a.refreshToken });
    expect(late.status).to.equal(401);
    expect(late.body.error).to.equal('AUTH_TOKEN_INVALID');
    for (const r of [...answers, onward]) {
      expect((await http.get('/auth/me', bearer(r.body.accessToken))).status).to.equal(401);
      expect((await http.post('/auth/refresh-token', { refreshToken: r.body.refreshToken })).status).to.equal(401);
    }
    expect((await authEvents(t)).refresh_reuse).to.equal(1);
  });

  it('refresh_reuse stays 0 through logout then refresh, and password reset then refresh', async () => {
    const before = (await authEvents(t)).refresh_reuse ?? 0;
    const a = await signUpAndConfirm(t, http);
    expect((await http.post('/auth/logout', undefined, bearer(a.accessToken))).status).to.equal(200);
    t.clock.advanceSeconds(60);
    expect((await http.post('/auth/refresh-token', { refreshToken: a.refreshToken })).status).to.equal(401);

    const login = await http.post('/auth/login', { email: a.email, password: PASSWORD });
    const mailsBefore = t.smtp.to(a.email).length;
    await http.post('/auth/recover-password', { email: a.email });
    const code = codeIn(await t.smtp.waitFor(a.email, { after: mailsBefore }));
    expect(
      (await http.post('/auth/reset-password', { email: a.email, code, newPassword: 'an entirely new passphrase 77' })).status,
    ).to.equal(200);
    t.clock.advanceSeconds(60);
    expect((await http.post('/auth/refresh-token', { refreshToken: login.body.refreshToken })).status).to.equal(401);

    const events = await authEvents(t);
    expect(events.refresh_reuse ?? 0).to.equal(before);
    expect(events.refresh_invalid_session_ended).to.be.at.least(2);
  });

  it('a logged-out access token with a 5 s lifetime is refused at every second until it expires', async () => {
    const { http: short } = await t.provision({ projectId: 'refresh-short', name: 'master', accessTokenTtlSeconds: 5 });
    const a = await signUpAndConfirm(t, short);
    expect((await short.post('/auth/logout', undefined, bearer(a.accessToken))).status).to.equal(200);
    // Past exp, the clock-skew grace still accepts a genuine token: the revocation entry must outlive it.
    const horizon = 5 + t.config.tokenClockSkewSeconds + 2;
    for (let s = 0; s <= horizon; s++) {
      const res = await short.get('/auth/sessions', bearer(a.accessToken));
      expect(res.status, `${s} s after logout`).to.equal(401);
      t.clock.advanceSeconds(1);
    }
  });

  it('the session ends at its absolute lifetime however often it is refreshed', async () => {
    const { http: abs, env } = await t.provision({ projectId: 'refresh-abs', name: 'master' });
    const token = await t.managementToken(env.projectId);
    const patched = await abs.patch('/api/rest/_environment', { sessionLifetimeSeconds: 3600 }, bearer(token));
    expect(patched.status, JSON.stringify(patched.body)).to.equal(200);
    const a = await signUpAndConfirm(t, abs);
    let refreshToken = a.refreshToken;
    for (let i = 0; i < 3; i++) {
      t.clock.advanceSeconds(1000);
      const r = await abs.post('/auth/refresh-token', { refreshToken });
      expect(r.status).to.equal(200);
      refreshToken = r.body.refreshToken;
    }
    t.clock.advanceSeconds(700); // 3,700 s after login
    expect((await abs.post('/auth/refresh-token', { refreshToken })).status).to.equal(401);
  });
});
