import { expect } from 'chai';
import { Pruner } from '../../../src/retention/pruner.js';
import type { TestApi } from '../../support/api.js';
import { HttpClient } from '../../support/http.js';
import { codeIn } from '../../support/smtp.js';
import { eventually } from '../../delivery/support.js';
import { bearer, PASSWORD, signUpAndConfirm, startAuthApi, uniqueEmail } from '../support.js';

// The audit trail: every auth state change appends one row in the transaction of the change,
// readable per user and per environment, and bounded by AUTH_EVENTS_RETENTION_MS.

const AGENT = 'audit-test/1.0';

describe('auth events: the audit trail', function () {
  this.timeout(60_000);
  let t: TestApi;
  let http: HttpClient;
  let admin: HttpClient;

  before(async () => {
    t = await startAuthApi({ env: { AUTH_EVENTS_RETENTION_MS: String(3600_000), MAIL_RETENTION_MS: String(3600_000) } });
    ({ http } = await t.provision({ projectId: 'audit', name: 'master' }));
    http = http.with({ 'user-agent': AGENT });
    admin = new HttpClient(t.url, {
      authorization: `Bearer ${await t.managementToken('audit')}`,
      'x-project-id': 'audit',
      environment: 'master',
    });
  });
  after(() => t.close());

  const eventsOf = async (userId: string) => (await admin.get(`/api/rest/_users/${userId}/events`)).body.events as any[];

  it('appends one row per outcome of every auth endpoint and admin action, with client address, user agent and session', async () => {
    const account = await signUpAndConfirm(t, http);
    await http.post('/auth/login', { email: account.email, password: 'not the password 1234' });
    const login = await http.post('/auth/login', { email: account.email, password: PASSWORD });
    // A refresh token used twice (after the grace period) revokes its session.
    const rotated = await http.post('/auth/refresh-token', { refreshToken: login.body.refreshToken });
    expect(rotated.status).to.equal(200);
    t.clock.advanceSeconds(60);
    expect((await http.post('/auth/refresh-token', { refreshToken: login.body.refreshToken })).status).to.equal(401);
    expect((await http.post('/auth/logout', undefined, bearer(account.accessToken))).status).to.equal(200);
    const before = t.smtp.to(account.email).length;
    await http.post('/auth/recover-password', { email: account.email });
    const mail = await t.smtp.waitFor(account.email, { after: before, timeoutMs: 15_000 });
    await http.post('/auth/reset-password', { email: account.email, code: codeIn(mail), newPassword: `${PASSWORD} again` });
    await http.patch(
      '/auth/me',
      { userMetadata: { a: 1 } },
      bearer((await http.post('/auth/login', { email: account.email, password: `${PASSWORD} again` })).body.accessToken),
    );
    await admin.patch(`/api/rest/_users/${account.userId}`, { disabled: true, appMetadata: { tier: 1 } });
    await admin.patch(`/api/rest/_users/${account.userId}`, { disabled: false, emailVerified: false });
    await admin.post(`/api/rest/_users/${account.userId}/logout`);
    await admin.delete(`/api/rest/_users/${account.userId}`);

    const events = (await eventsOf(account.userId)).reverse();
    expect(events.map((e) => e.type)).to.deep.equal([
      'user.signed_up',
      'user.confirmed',
      'user.logged_in',
      'user.login_failed',
      'user.logged_in',
      'user.session_revoked',
      'user.refresh_reuse',
      'user.logged_out',
      'user.recovery_requested',
      'user.password_reset',
      'user.logged_in',
      'user.metadata_changed',
      'user.disabled',
      'user.metadata_changed',
      'user.enabled',
      'user.email_verified',
      'user.deleted',
    ]);
    const byType = (type: string) => events.filter((e) => e.type === type);
    for (const e of events.filter((x) => !x.actor))
      expect(e.userAgent, e.type).to.satisfy((ua: string | null) => ua === AGENT || e.type === 'user.session_revoked');
    expect(byType('user.logged_in')[0].sessionId).to.be.a('string');
    expect(byType('user.logged_out')[0].sessionId).to.equal(byType('user.logged_in')[0].sessionId);
    expect(byType('user.signed_up')[0].clientAddress).to.match(/127\.0\.0\.1/);
    const adminEvents = events.filter((e) => ['user.disabled', 'user.enabled', 'user.deleted', 'user.email_verified'].includes(e.type));
    expect(adminEvents.every((e) => /^mt_/.test(e.actor))).to.equal(true);
    expect(byType('user.metadata_changed').map((e) => e.details.field)).to.deep.equal(['userMetadata', 'appMetadata']);
    // The codes never appear in the trail.
    expect(JSON.stringify(events)).not.to.contain(codeIn(mail));
  });

  it('records a lockout; unknown addresses leave no rows; the environment-wide search filters by type and time', async () => {
    const account = await signUpAndConfirm(t, http);
    for (let i = 0; i < 5; i++) await http.post('/auth/login', { email: account.email, password: `wrong password ${i} xyz` });
    // A failed login's row is written just after its answer (so it cannot time the address).
    const types = await eventually(
      async () => (await eventsOf(account.userId)).map((e) => e.type),
      (all) => all.includes('user.locked'),
    );
    expect(types.filter((x) => x === 'user.login_failed')).to.have.length(4);
    expect(types[0]).to.equal('user.locked');
    expect((await admin.get(`/api/rest/_users?status=locked&query=${account.email}`)).body.users).to.have.length(1);

    const { rows: before } = await t.ctx.pool.query('SELECT count(*)::int AS n FROM walgate.auth_events');
    await http.post('/auth/login', { email: uniqueEmail('nobody'), password: 'whatever password 1' });
    await http.post('/auth/recover-password', { email: uniqueEmail('nobody') });
    await new Promise((r) => setTimeout(r, 200));
    const { rows: after } = await t.ctx.pool.query('SELECT count(*)::int AS n FROM walgate.auth_events');
    expect(after[0].n).to.equal(before[0].n);

    const since = new Date(t.clock.now().getTime() - 1000).toISOString();
    const locked = await admin.get(`/api/rest/_auth-events?type=user.locked&since=${encodeURIComponent(since)}`);
    expect(locked.body.events.map((e: any) => e.userId)).to.deep.equal([account.userId]);
    const future = new Date(t.clock.now().getTime() + 3600_000).toISOString();
    expect((await admin.get(`/api/rest/_auth-events?since=${encodeURIComponent(future)}`)).body.events).to.deep.equal([]);
    const badType = await admin.get('/api/rest/_auth-events?type=user.hacked');
    expect([badType.status, badType.body.error]).to.deep.equal([400, 'VALIDATION_ERROR']);
  });

  it('retention removes audit rows and finished e-mails older than their windows, and keeps the rest', async () => {
    const old = await signUpAndConfirm(t, http);
    t.clock.advance(2 * 3600_000);
    const fresh = await signUpAndConfirm(t, http);
    const report = await new Pruner(t.ctx, { scopes: ['auth'] }).runPass();
    expect(report.auth_events).to.be.greaterThan(0);
    expect(report.mail_outbox).to.be.greaterThan(0);
    expect(await eventsOf(old.userId)).to.deep.equal([]);
    expect((await eventsOf(fresh.userId)).map((e) => e.type)).to.include('user.signed_up');
    const { rows } = await t.ctx.pool.query('SELECT user_id FROM walgate.mail_outbox WHERE user_id = ANY($1)', [
      [old.userId, fresh.userId],
    ]);
    expect(rows.map((r) => r.user_id)).to.deep.equal([fresh.userId]);
  });
});
