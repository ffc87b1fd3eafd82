import { expect } from 'chai';
import { decodeJwt } from 'jose';
import type { TestApi } from '../../support/api.js';
import { walgate } from '../../support/cli.js';
import { HttpClient } from '../../support/http.js';
import { codeIn } from '../../support/smtp.js';
import { bearer, PASSWORD, signUpAndConfirm, startAuthApi, uniqueEmail } from '../support.js';

// The admin API for end users, its CLI twins, and what a disabled or deleted user meets.

describe('users: the admin API and its CLI twins', function () {
  this.timeout(60_000);
  let t: TestApi;
  let http: HttpClient;
  let admin: HttpClient;
  let token: string;
  let otherToken: string;

  before(async () => {
    t = await startAuthApi();
    ({ http } = await t.provision({ projectId: 'crm', name: 'master' }));
    await t.provision({ projectId: 'crm', name: 'staging' });
    await t.provision({ projectId: 'rival', name: 'master' });
    token = await t.managementToken('crm');
    otherToken = await t.managementToken('rival');
    admin = new HttpClient(t.url, { authorization: `Bearer ${token}`, 'x-project-id': 'crm', environment: 'master' });
  });
  after(() => t.close());

  describe('shared negative cases on every endpoint', () => {
    const unknownId = '00000000-0000-4000-8000-000000000000';
    let userId: string;
    before(async () => {
      const created = await admin.post('/api/rest/_users', { email: uniqueEmail('neg'), password: PASSWORD, emailVerified: true });
      expect(created.status, JSON.stringify(created.body)).to.equal(201);
      userId = created.body.user.id;
    });

    const endpoints = (id: string): Array<[string, string, unknown?]> => [
      ['GET', '/api/rest/_users'],
      ['POST', '/api/rest/_users', { email: uniqueEmail('x'), password: PASSWORD }],
      ['GET', `/api/rest/_users/${id}`],
      ['PATCH', `/api/rest/_users/${id}`, { disabled: false }],
      ['POST', `/api/rest/_users/${id}/logout`],
      ['GET', `/api/rest/_users/${id}/events`],
      ['DELETE', `/api/rest/_users/${id}`],
      ['GET', '/api/rest/_auth-events'],
    ];
    const good = () => ({ authorization: `Bearer ${token}`, 'x-project-id': 'crm', environment: 'master' });
    const cases: Array<[string, () => Record<string, string>, number, string]> = [
      ['no token', () => ({ 'x-project-id': 'crm', environment: 'master' }), 401, 'AUTH_TOKEN_INVALID'],
      ['a wrong token', () => ({ ...good(), authorization: 'Bearer wgm_notarealtoken' }), 401, 'AUTH_TOKEN_INVALID'],
      ["another project's token", () => ({ ...good(), authorization: `Bearer ${otherToken}` }), 403, 'FORBIDDEN'],
      ['no environment header', () => ({ authorization: `Bearer ${token}`, 'x-project-id': 'crm' }), 400, 'VALIDATION_ERROR'],
      ['an unknown environment', () => ({ ...good(), environment: 'nope' }), 400, 'VALIDATION_ERROR'],
    ];
    for (const [label, headers, status, code] of cases) {
      it(`${label}: ${status} ${code} everywhere, and nothing changes`, async () => {
        for (const [method, path, body] of endpoints(userId)) {
          const r = await new HttpClient(t.url).request(method, path, { headers: headers(), body });
          expect(r.status, `${method} ${path}`).to.equal(status);
          expect(r.body.error, `${method} ${path}`).to.equal(code);
        }
        expect((await admin.get(`/api/rest/_users/${userId}`)).status).to.equal(200);
      });
    }

    it('another environment of the same project does not see the user: 404 USER_NOT_FOUND', async () => {
      const staging = admin.with({ environment: 'staging' });
      for (const [method, path, body] of endpoints(userId).filter(([, p]) => p.includes(userId))) {
        const r = await staging.request(method, path, { body });
        expect(r.status, `${method} ${path}`).to.equal(404);
        expect(r.body.error).to.equal('USER_NOT_FOUND');
      }
    });

    it('an unknown id is 404 USER_NOT_FOUND, a malformed one 400, bad JSON 400, unknown fields 400', async () => {
      for (const [method, path, body] of endpoints(unknownId).filter(([, p]) => p.includes(unknownId))) {
        const r = await admin.request(method, path, { body });
        expect(r.status, `${method} ${path}`).to.equal(404);
        expect(r.body.error).to.equal('USER_NOT_FOUND');
      }
      const bad = await admin.get('/api/rest/_users/not-a-uuid');
      expect([bad.status, bad.body.error]).to.deep.equal([400, 'VALIDATION_ERROR']);
      for (const [method, path] of [
        ['POST', '/api/rest/_users'],
        ['PATCH', `/api/rest/_users/${userId}`],
      ]) {
        const r = await admin.request(method!, path!, { raw: '{"email": ', headers: { 'content-type': 'application/json' } });
        expect([r.status, r.body.error], `${method} ${path}`).to.deep.equal([400, 'VALIDATION_ERROR']);
      }
      const unknownField = await admin.patch(`/api/rest/_users/${userId}`, { password: 'x' });
      expect([unknownField.status, unknownField.body.error]).to.deep.equal([400, 'VALIDATION_ERROR']);
      const cursor = await admin.get('/api/rest/_users?cursor=%00junk');
      expect([cursor.status, cursor.body.error]).to.deep.equal([400, 'VALIDATION_ERROR']);
      const big = await admin.patch(`/api/rest/_users/${userId}`, { appMetadata: { blob: 'x'.repeat(17 * 1024) } });
      expect([big.status, big.body.error]).to.deep.equal([400, 'VALIDATION_ERROR']);
    });

    it('the CLI twins: an unknown environment, an unknown user, a bad address and a delete without --yes exit 1 with a message', async () => {
      const env = await walgate(t, ['users', 'list', '--project', 'crm', '--environment', 'nope']);
      expect([env.code, env.stderr]).to.satisfy(([c, e]: [number, string]) => c === 1 && e.includes('no environment crm/nope'));
      const unknown = await walgate(t, ['users', 'show', unknownId, '--project', 'crm']);
      expect(unknown.code).to.equal(1);
      expect(unknown.stderr).to.contain('No user with this id');
      const badEmail = await walgate(t, ['users', 'disable', 'not an address', '--project', 'crm']);
      expect(badEmail.code).to.equal(1);
      expect(badEmail.stderr).to.contain('not a user id or an e-mail address');
      const noYes = await walgate(t, ['users', 'delete', userId, '--project', 'crm']);
      expect(noYes.code).to.equal(1);
      expect(noYes.stderr).to.contain('--yes');
      expect((await admin.get(`/api/rest/_users/${userId}`)).status).to.equal(200);
      const otherEnv = await walgate(t, ['users', 'show', userId, '--project', 'crm', '--environment', 'staging']);
      expect(otherEnv.code).to.equal(1);
    });
  });

  it('lists with an e-mail prefix, a status and cursor pages', async () => {
    const prefix = `page${Date.now().toString(36)}`;
    for (let i = 0; i < 3; i++)
      await admin.post('/api/rest/_users', { email: `${prefix}.${i}@example.com`, password: PASSWORD, emailVerified: true });
    await admin.post('/api/rest/_users', { email: `${prefix}.unverified@example.com`, password: PASSWORD });
    const all = await admin.get(`/api/rest/_users?query=${prefix}`);
    expect(all.status, JSON.stringify(all.body)).to.equal(200);
    expect(all.body.users.map((u: any) => u.email)).to.have.length(4);
    const unverified = await admin.get(`/api/rest/_users?query=${prefix}&status=unverified`);
    expect(unverified.body.users.map((u: any) => u.email)).to.deep.equal([`${prefix}.unverified@example.com`]);
    const active = await admin.get(`/api/rest/_users?query=${prefix}&status=active`);
    expect(active.body.users).to.have.length(3);
    // A LIKE wildcard in the query is a literal character.
    expect((await admin.get('/api/rest/_users?query=%25')).body.users).to.deep.equal([]);
    // Cursor pages: 50 a page, the next page continues where the first ended.
    await t.ctx.pool.query(
      `INSERT INTO walgate.users (project_id, environment, email, password_hash, created_at, updated_at)
       SELECT 'crm', 'master', $1 || '.bulk' || g || '@example.com', 'x', now() - g * interval '1 second', now() FROM generate_series(1, 60) g`,
      [prefix],
    );
    const first = await admin.get(`/api/rest/_users?query=${prefix}.bulk`);
    expect(first.body.users).to.have.length(50);
    const second = await admin.get(`/api/rest/_users?query=${prefix}.bulk&cursor=${first.body.nextCursor}`);
    expect(second.body.users).to.have.length(10);
    expect(second.body.nextCursor).to.equal(null);
    const seen = new Set([...first.body.users, ...second.body.users].map((u: any) => u.id));
    expect(seen.size).to.equal(60);
  });

  it('a disabled user: login 403 AUTH_USER_DISABLED, refresh 401, a live access token 401 at its next request; enabled again, login works', async () => {
    const account = await signUpAndConfirm(t, http);
    expect((await http.get('/auth/me', bearer(account.accessToken))).status).to.equal(200);
    const disabled = await admin.patch(`/api/rest/_users/${account.userId}`, { disabled: true });
    expect(disabled.status).to.equal(200);
    expect(disabled.body.user).to.include({ status: 'disabled', disabled: true });
    expect(disabled.body.sessions.every((s: any) => s.revokedAt !== null)).to.equal(true);

    const me = await http.get('/auth/me', bearer(account.accessToken));
    expect([me.status, me.body.error]).to.deep.equal([401, 'AUTH_TOKEN_INVALID']);
    const refresh = await http.post('/auth/refresh-token', { refreshToken: account.refreshToken });
    expect(refresh.status).to.equal(401);
    const login = await http.post('/auth/login', { email: account.email, password: PASSWORD });
    expect([login.status, login.body.error]).to.deep.equal([403, 'AUTH_USER_DISABLED']);
    expect((await admin.get(`/api/rest/_users?status=disabled&query=${account.email}`)).body.users).to.have.length(1);

    const enabled = await admin.patch(`/api/rest/_users/${account.userId}`, { disabled: false });
    expect(enabled.body.user.status).to.equal('active');
    expect((await http.post('/auth/login', { email: account.email, password: PASSWORD })).status).to.equal(200);

    const types = (await admin.get(`/api/rest/_users/${account.userId}/events`)).body.events.map((e: any) => e.type);
    expect(types.slice(0, 3)).to.deep.equal(['user.logged_in', 'user.enabled', 'user.disabled']);
    const disabledEvent = (await admin.get(`/api/rest/_auth-events?type=user.disabled`)).body.events.find(
      (e: any) => e.userId === account.userId,
    );
    expect(disabledEvent.actor).to.match(/^mt_/);
  });

  it('a deleted user: gone with everything of theirs, their live access token refused at once, their history kept', async () => {
    const account = await signUpAndConfirm(t, http);
    const del = await admin.delete(`/api/rest/_users/${account.userId}`);
    expect(del.status).to.equal(204);
    expect((await http.get('/auth/me', bearer(account.accessToken))).status).to.equal(401);
    expect((await http.post('/auth/refresh-token', { refreshToken: account.refreshToken })).status).to.equal(401);
    expect((await http.post('/auth/login', { email: account.email, password: PASSWORD })).status).to.equal(401);
    expect((await admin.get(`/api/rest/_users/${account.userId}`)).status).to.equal(404);
    const { rows } = await t.ctx.pool.query(
      `SELECT (SELECT count(*) FROM walgate.sessions WHERE user_id = $1)::int AS sessions,
              (SELECT count(*) FROM walgate.mail_outbox WHERE user_id = $1)::int AS mails`,
      [account.userId],
    );
    expect(rows[0]).to.deep.equal({ sessions: 0, mails: 0 });
    const events = await admin.get(`/api/rest/_users/${account.userId}/events`);
    expect(events.body.events.map((e: any) => e.type)[0]).to.equal('user.deleted');
  });

  it('create with a password or by invitation; the detail lists e-mails with their state and never their code', async () => {
    const email = uniqueEmail('invited');
    const invited = await admin.post('/api/rest/_users', { email, invite: true, appMetadata: { plan: 'pro' } });
    expect(invited.status).to.equal(201);
    const mail = await t.smtp.waitFor(email, { timeoutMs: 15_000 });
    expect(mail.subject).to.contain('invitation');
    const reset = await http.post('/auth/reset-password', { email, code: codeIn(mail), newPassword: PASSWORD });
    expect(reset.status, JSON.stringify(reset.body)).to.equal(200);
    const login = await http.post('/auth/login', { email, password: PASSWORD });
    expect(login.status).to.equal(200);
    expect(decodeJwt(login.body.accessToken).app_metadata).to.deep.equal({ plan: 'pro' });

    const detail = await admin.get(`/api/rest/_users/${invited.body.user.id}`);
    expect(detail.body.emails).to.have.length(1);
    expect(detail.body.emails[0]).to.include({ purpose: 'invite', state: 'sent' });
    expect(detail.text).not.to.contain(codeIn(mail));
    expect(detail.body.sessions).to.have.length(1);
    expect(detail.body).to.include.keys('factors', 'identities');

    const taken = await admin.post('/api/rest/_users', { email, password: PASSWORD });
    expect([taken.status, taken.body.error]).to.deep.equal([409, 'AUTH_EMAIL_EXISTS']);
    const noPassword = await admin.post('/api/rest/_users', { email: uniqueEmail('np') });
    expect([noPassword.status, noPassword.body.error]).to.deep.equal([400, 'VALIDATION_ERROR']);
  });

  it('appMetadata (admin) travels in access tokens, refreshed ones too; userMetadata is the user’s own (PATCH /auth/me)', async () => {
    const account = await signUpAndConfirm(t, http);
    await admin.patch(`/api/rest/_users/${account.userId}`, { appMetadata: { roles: ['editor'] } });
    const refreshed = await http.post('/auth/refresh-token', { refreshToken: account.refreshToken });
    expect(decodeJwt(refreshed.body.accessToken).app_metadata).to.deep.equal({ roles: ['editor'] });

    const patched = await http.patch('/auth/me', { userMetadata: { theme: 'dark' } }, bearer(refreshed.body.accessToken));
    expect(patched.status, JSON.stringify(patched.body)).to.equal(200);
    expect(patched.body.user).to.deep.include({ userMetadata: { theme: 'dark' }, appMetadata: { roles: ['editor'] } });
    const me = await http.get('/auth/me', bearer(refreshed.body.accessToken));
    expect(me.body.user.userMetadata).to.deep.equal({ theme: 'dark' });
    // The user cannot write appMetadata, and 16 KB is the bound.
    const sneaky = await http.patch(
      '/auth/me',
      { userMetadata: {}, appMetadata: { roles: ['admin'] } },
      bearer(refreshed.body.accessToken),
    );
    expect(sneaky.status).to.equal(200);
    expect(sneaky.body.user.appMetadata).to.deep.equal({ roles: ['editor'] });
    const big = await http.patch('/auth/me', { userMetadata: { blob: 'x'.repeat(17 * 1024) } }, bearer(refreshed.body.accessToken));
    expect([big.status, big.body.error]).to.deep.equal([400, 'VALIDATION_ERROR']);
    const notObject = await http.patch('/auth/me', { userMetadata: [1, 2] }, bearer(refreshed.body.accessToken));
    expect(notObject.status).to.equal(400);
    expect((await http.patch('/auth/me', { userMetadata: {} })).status).to.equal(401);
    // appMetadata travels in every token: its bound (4 KB) keeps the largest token usable.
    const largest = { blob: 'x'.repeat(4 * 1024 - 20) };
    expect((await admin.patch(`/api/rest/_users/${account.userId}`, { appMetadata: largest })).status).to.equal(200);
    const heavy = await http.post('/auth/refresh-token', { refreshToken: refreshed.body.refreshToken });
    expect(decodeJwt(heavy.body.accessToken).app_metadata).to.deep.equal(largest);
    expect((await http.get('/auth/me', bearer(heavy.body.accessToken))).status).to.equal(200);
    const tooBig = await admin.patch(`/api/rest/_users/${account.userId}`, { appMetadata: { blob: 'x'.repeat(4 * 1024) } });
    expect([tooBig.status, tooBig.body.error]).to.deep.equal([400, 'VALIDATION_ERROR']);
  });

  it('logout everywhere: REST and CLI end every session', async () => {
    const account = await signUpAndConfirm(t, http);
    const second = await http.post('/auth/login', { email: account.email, password: PASSWORD });
    const out = await admin.post(`/api/rest/_users/${account.userId}/logout`);
    expect(out.body).to.deep.equal({ sessionsEnded: 2 });
    expect((await http.get('/auth/me', bearer(account.accessToken))).status).to.equal(401);
    expect((await http.get('/auth/me', bearer(second.body.accessToken))).status).to.equal(401);
    const again = await http.post('/auth/login', { email: account.email, password: PASSWORD });
    const cli = await walgate(t, ['users', 'logout', account.email, '--project', 'crm']);
    expect(cli.stdout).to.contain('ended 1 session');
    expect((await http.get('/auth/me', bearer(again.body.accessToken))).status).to.equal(401);
  });

  it('the CLI twins: list, show, create, disable, enable, delete', async () => {
    const email = uniqueEmail('cli');
    const created = await walgate(t, ['users', 'create', email, '--password', PASSWORD, '--verified', '--project', 'crm']);
    expect(created.code, created.stderr).to.equal(0);
    const id = JSON.parse(created.stdout).user.id;
    const list = await walgate(t, ['users', 'list', '--query', email, '--project', 'crm']);
    expect(list.stdout).to.contain(email).and.to.contain('active');
    const disable = await walgate(t, ['users', 'disable', email, '--project', 'crm']);
    expect(disable.stdout).to.contain('disabled');
    expect((await http.post('/auth/login', { email, password: PASSWORD })).body.error).to.equal('AUTH_USER_DISABLED');
    await walgate(t, ['users', 'enable', id, '--project', 'crm']);
    expect((await http.post('/auth/login', { email, password: PASSWORD })).status).to.equal(200);
    const show = JSON.parse((await walgate(t, ['users', 'show', email, '--project', 'crm'])).stdout);
    expect(show.user.email).to.equal(email);
    expect(show.events.map((e: any) => e.type)).to.include.members(['user.created', 'user.disabled', 'user.enabled', 'user.logged_in']);
    expect(show.events.find((e: any) => e.type === 'user.disabled').actor).to.equal('cli');
    const del = await walgate(t, ['users', 'delete', email, '--yes', '--project', 'crm']);
    expect(del.code).to.equal(0);
    expect((await admin.get(`/api/rest/_users/${id}`)).status).to.equal(404);
  });
});
