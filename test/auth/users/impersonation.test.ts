import { expect } from 'chai';
import type { TestApi } from '../../support/api.js';
import { HttpClient } from '../../support/http.js';
import { claimsOf, enrolTotp, gql } from '../mfa/support.js';
import { bearer, signUpAndConfirm, startAuthApi, type Account } from '../support.js';

// Impersonation: an operator's time-boxed session as a user. Its tokens say who acts, it cannot
// change how the user signs in, its start is in the audit trail, and the user sees and ends it.

describe('users: impersonation', function () {
  this.timeout(60_000);
  let t: TestApi;
  let http: HttpClient;
  let admin: HttpClient;
  let a: Account;
  let tokenId: string;

  const impersonate = (userId: string, body?: unknown, client = admin) => client.post(`/api/rest/_users/${userId}/impersonate`, body);

  before(async () => {
    t = await startAuthApi();
    ({ http } = await t.provision({ projectId: 'imp', name: 'master' }));
    await t.provision({ projectId: 'imp', name: 'staging' });
    await t.provision({ projectId: 'imp-rival', name: 'master' });
    const token = await t.managementToken('imp');
    admin = new HttpClient(t.url, { authorization: `Bearer ${token}`, 'x-project-id': 'imp', environment: 'master' });
    tokenId = (await t.ctx.pool.query('SELECT id FROM walgate.management_tokens ORDER BY created_at DESC LIMIT 1')).rows[0].id;
    a = await signUpAndConfirm(t, http);
  });
  after(() => t.close());

  it('a time-boxed session as the user: act {sub: operator}, amr impersonation, and the user’s own view', async () => {
    const r = await impersonate(a.userId, { durationSeconds: 600 });
    expect(r.status, JSON.stringify(r.body)).to.equal(201);
    expect(r.body).to.include.keys('accessToken', 'refreshToken', 'tokenType', 'expiresIn', 'expiresAt');
    expect(new Date(r.body.expiresAt).getTime() - t.clock.now().getTime()).to.equal(600_000);
    const claims = claimsOf(r.body.accessToken);
    expect(claims).to.deep.include({ sub: a.userId, act: { sub: 'operator' }, amr: ['impersonation'], aal: 'aal1' });
    const me = await http.get('/auth/me', bearer(r.body.accessToken));
    expect(me.status).to.equal(200);
    expect(me.body.user.email).to.equal(a.email);
    // A refresh keeps saying who acts.
    const refreshed = await http.post('/auth/refresh-token', { refreshToken: r.body.refreshToken });
    expect(claimsOf(refreshed.body.accessToken).act).to.deep.equal({ sub: 'operator' });
    // The user's own tokens say nothing of the kind.
    expect(claimsOf(a.accessToken)).to.not.have.property('act');
  });

  it('cannot change the user’s factors or identities: 403 AUTH_IMPERSONATION_FORBIDDEN, nothing changes', async () => {
    const b = await signUpAndConfirm(t, http);
    const factor = await enrolTotp(t, http, b);
    const { accessToken } = (await impersonate(b.userId)).body;
    const as = bearer(accessToken);
    const attempts: Array<[string, string, unknown?]> = [
      ['POST', '/auth/mfa/totp/enroll', {}],
      ['POST', '/auth/mfa/totp/verify', { factorId: factor.factorId, code: '123456' }],
      ['DELETE', `/auth/mfa/factors/${factor.factorId}`],
      ['POST', '/auth/mfa/recovery-codes'],
      ['POST', '/auth/passkeys/register/options'],
      ['DELETE', '/auth/identities/00000000-0000-4000-8000-000000000000'],
    ];
    for (const [method, path, body] of attempts) {
      const r = await http.request(method, path, { ...as, body });
      expect(r.status, `${method} ${path}: ${JSON.stringify(r.body)}`).to.equal(403);
      expect(r.body.error, `${method} ${path}`).to.equal('AUTH_IMPERSONATION_FORBIDDEN');
    }
    const viaGraphql = await gql(http, 'mutation { mfaRecoveryCodes { recoveryCodes } }', {}, accessToken);
    expect(viaGraphql.body.errors[0].extensions.code).to.equal('AUTH_IMPERSONATION_FORBIDDEN');
    // Reading is what impersonation is for.
    const listed = await http.get('/auth/mfa/factors', as);
    expect(listed.status).to.equal(200);
    expect(listed.body.factors.map((f: { id: string }) => f.id)).to.deep.equal([factor.factorId]);
    expect(listed.body.recoveryCodesLeft).to.equal(10);
  });

  it('the start is an audit row naming the management token; the user lists the session and ends it, which ends its tokens', async () => {
    const c = await signUpAndConfirm(t, http);
    const started = await impersonate(c.userId);
    const events = (await admin.get(`/api/rest/_users/${c.userId}/events`)).body.events as any[];
    const row = events.find((e) => e.type === 'user.impersonation_started');
    expect(row, JSON.stringify(events)).to.not.equal(undefined);
    expect(row.actor).to.equal(tokenId);
    expect(row.sessionId).to.be.a('string');

    const listed = await http.get('/auth/sessions', bearer(c.accessToken));
    const impersonated = listed.body.sessions.filter((s: { impersonated: boolean }) => s.impersonated);
    expect(impersonated).to.have.length(1);
    expect(impersonated[0].id).to.equal(row.sessionId);
    expect(listed.body.sessions.find((s: { current: boolean }) => s.current).impersonated).to.equal(false);

    const ended = await http.delete(`/auth/sessions/${row.sessionId}`, bearer(c.accessToken));
    expect(ended.status).to.equal(200);
    const after = await http.get('/auth/me', bearer(started.body.accessToken));
    expect(after.status).to.equal(401);
    expect((await http.post('/auth/refresh-token', { refreshToken: started.body.refreshToken })).status).to.equal(401);
  });

  it('what the session changes is in the audit trail naming the operator; the user’s own changes name no operator', async () => {
    const e = await signUpAndConfirm(t, http);
    const { accessToken } = (await impersonate(e.userId)).body;
    const created = await http.post('/auth/organizations', { name: 'Made by support' }, bearer(accessToken));
    expect(created.status, JSON.stringify(created.body)).to.equal(201);
    const own = await http.post('/auth/organizations', { name: 'Made by the user' }, bearer(e.accessToken));
    expect(own.status).to.equal(201);
    expect((await http.patch('/auth/me', { userMetadata: { theme: 'dark' } }, bearer(accessToken))).status).to.equal(200);
    expect((await http.post('/auth/logout', {}, bearer(accessToken))).status).to.equal(200);
    const events = (await admin.get(`/api/rest/_users/${e.userId}/events`)).body.events as any[];
    const by = (type: string, organizationId?: string) =>
      events.filter((r) => r.type === type && (!organizationId || r.details.organizationId === organizationId)).map((r) => r.actor);
    expect(by('organization.created', created.body.organization.id)).to.deep.equal([tokenId]);
    expect(by('member.added', created.body.organization.id)).to.deep.equal([tokenId]);
    expect(by('organization.created', own.body.organization.id)).to.deep.equal([null]);
    expect(by('user.metadata_changed')).to.deep.equal([tokenId]);
    expect(by('user.logged_out')).to.deep.equal([tokenId]);
  });

  it('ends when its time is up, however it is refreshed', async () => {
    const r = await impersonate(a.userId, { durationSeconds: 120 });
    t.clock.advanceSeconds(60);
    const first = await http.post('/auth/refresh-token', { refreshToken: r.body.refreshToken });
    expect(first.status).to.equal(200);
    t.clock.advanceSeconds(61);
    const late = await http.post('/auth/refresh-token', { refreshToken: first.body.refreshToken });
    expect(late.status).to.equal(401);
  });

  it('bad input and other tenants: the documented envelope', async () => {
    const unknown = '00000000-0000-4000-8000-000000000000';
    expect((await impersonate(unknown)).body.error).to.equal('USER_NOT_FOUND');
    expect((await impersonate('not-a-uuid')).status).to.equal(400);
    for (const body of [{ durationSeconds: 10 }, { durationSeconds: 99999 }, { durationSeconds: 'long' }, { other: 1 }]) {
      const r = await impersonate(a.userId, body);
      expect(r.status, JSON.stringify(body)).to.equal(400);
      expect(r.body.error).to.equal('VALIDATION_ERROR');
    }
    // Another environment of the project, or another project's token, cannot reach the user.
    expect((await impersonate(a.userId, undefined, admin.with({ environment: 'staging' }))).body.error).to.equal('USER_NOT_FOUND');
    const rival = admin.with({ authorization: `Bearer ${await t.managementToken('imp-rival')}` });
    expect((await impersonate(a.userId, undefined, rival)).status).to.equal(403);
    expect((await impersonate(a.userId, undefined, admin.with({ authorization: 'Bearer nope' }))).status).to.equal(401);
    // A disabled user cannot be impersonated.
    const d = await signUpAndConfirm(t, http);
    expect((await admin.patch(`/api/rest/_users/${d.userId}`, { disabled: true })).status).to.equal(200);
    const refused = await impersonate(d.userId);
    expect(refused.status).to.equal(403);
    expect(refused.body.error).to.equal('AUTH_USER_DISABLED');
  });
});
