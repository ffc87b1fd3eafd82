import { expect } from 'chai';
import { decodeJwt } from 'jose';
import type { TestApi } from '../../support/api.js';
import { walgate } from '../../support/cli.js';
import { HttpClient } from '../../support/http.js';
import { bearer, signUpAndConfirm, startAuthApi, uniqueEmail, type Account } from '../support.js';
import { invitationTokenIn } from './support.js';

// Operators' API for organizations (/api/rest/_organizations) and its CLI twins: the same rules as
// for owners (an owner always, the limits), every change audited with the management token.

describe('organizations: the operator API and its CLI twins', function () {
  this.timeout(90_000);
  let t: TestApi;
  let http: HttpClient;
  let admin: HttpClient;
  let token: string;
  let otherToken: string;
  let ada: Account;
  let bob: Account;

  before(async () => {
    t = await startAuthApi();
    ({ http } = await t.provision({ projectId: 'ops', name: 'master' }));
    await t.provision({ projectId: 'ops', name: 'staging' });
    await t.provision({ projectId: 'rival', name: 'master' });
    token = await t.managementToken('ops');
    otherToken = await t.managementToken('rival');
    admin = new HttpClient(t.url, { authorization: `Bearer ${token}`, 'x-project-id': 'ops', environment: 'master' });
    ada = await signUpAndConfirm(t, http, uniqueEmail('ada'));
    bob = await signUpAndConfirm(t, http, uniqueEmail('bob'));
  });
  after(() => t.close());

  it('create for a user, add, promote, remove (tokens refused at once), invite, revoke, delete; audited with the token', async () => {
    const created = await admin.post('/api/rest/_organizations', { name: 'Initech', ownerId: ada.userId });
    expect(created.status, JSON.stringify(created.body)).to.equal(201);
    const id = created.body.organization.id;
    const added = await admin.post(`/api/rest/_organizations/${id}/members`, { userId: bob.userId, role: 'member' });
    expect(added.status, JSON.stringify(added.body)).to.equal(201);
    expect(added.body.member).to.include({ userId: bob.userId, email: bob.email, role: 'member' });
    const twice = await admin.post(`/api/rest/_organizations/${id}/members`, { userId: bob.userId, role: 'member' });
    expect([twice.status, twice.body.error]).to.deep.equal([409, 'ORGANIZATION_MEMBER_EXISTS']);

    const sw = await http.post('/auth/organizations/active', { organizationId: id }, bearer(bob.accessToken));
    expect(decodeJwt(sw.body.accessToken)).to.include({ org_id: id, org_role: 'member' });
    expect((await admin.patch(`/api/rest/_organizations/${id}/members/${bob.userId}`, { role: 'admin' })).status).to.equal(200);
    const refreshed = await http.post('/auth/refresh-token', { refreshToken: sw.body.refreshToken });
    expect(decodeJwt(refreshed.body.accessToken)).to.include({ org_role: 'admin' });

    const lastOwner = await admin.delete(`/api/rest/_organizations/${id}/members/${ada.userId}`);
    expect([lastOwner.status, lastOwner.body.error]).to.deep.equal([409, 'ORGANIZATION_LAST_OWNER']);
    expect((await admin.delete(`/api/rest/_organizations/${id}/members/${bob.userId}`)).status).to.equal(204);
    expect((await http.get('/auth/me', bearer(refreshed.body.accessToken))).status).to.equal(401);

    const email = uniqueEmail('carl');
    const before = t.smtp.to(email).length;
    const inv = await admin.post(`/api/rest/_organizations/${id}/invitations`, { email, role: 'admin' });
    expect(inv.status, JSON.stringify(inv.body)).to.equal(201);
    const mail = await t.smtp.waitFor(email, { after: before });
    expect(invitationTokenIn(mail)).to.match(/^wgi_/);
    const detail = await admin.get(`/api/rest/_organizations/${id}`);
    expect(detail.body.members.map((m: any) => m.role)).to.deep.equal(['owner']);
    expect(detail.body.invitations.map((i: any) => [i.email, i.status])).to.deep.equal([[email, 'pending']]);
    expect((await admin.delete(`/api/rest/_organizations/${id}/invitations/${inv.body.invitation.id}`)).status).to.equal(200);

    const list = await admin.get('/api/rest/_organizations');
    expect(list.body.organizations.find((o: any) => o.id === id)).to.include({ name: 'Initech', members: 1 });
    expect((await admin.patch(`/api/rest/_organizations/${id}`, { name: 'Initrode' })).body.organization.name).to.equal('Initrode');
    expect((await admin.delete(`/api/rest/_organizations/${id}`)).status).to.equal(204);
    expect((await admin.get(`/api/rest/_organizations/${id}`)).status).to.equal(404);

    const { rows } = await t.ctx.pool.query(
      `SELECT type, actor FROM walgate.auth_events WHERE project_id = 'ops' AND details->>'organizationId' = $1 ORDER BY seq`,
      [id],
    );
    expect(rows.map((r: any) => r.type)).to.deep.equal([
      'organization.created',
      'member.added',
      'member.added',
      'member.role_changed',
      'member.removed',
      'invitation.sent',
      'invitation.revoked',
      'organization.renamed',
      'organization.deleted',
    ]);
    const { rows: tokens } = await t.ctx.pool.query('SELECT id FROM walgate.management_tokens WHERE project_id = $1', ['ops']);
    expect(rows.every((r: any) => r.actor === tokens[0].id)).to.equal(true);
  });

  it('shared negative cases: no token, a wrong one, another project’s, no environment (nothing changes); another environment’s user is unknown', async () => {
    const id = (await admin.post('/api/rest/_organizations', { name: 'Guarded', ownerId: ada.userId })).body.organization.id;
    const good = () => ({ authorization: `Bearer ${token}`, 'x-project-id': 'ops', environment: 'master' });
    const endpoints: Array<[string, string, unknown?]> = [
      ['GET', '/api/rest/_organizations'],
      ['POST', '/api/rest/_organizations', { name: 'x', ownerId: ada.userId }],
      ['GET', `/api/rest/_organizations/${id}`],
      ['PATCH', `/api/rest/_organizations/${id}`, { name: 'y' }],
      ['POST', `/api/rest/_organizations/${id}/members`, { userId: bob.userId, role: 'member' }],
      ['PATCH', `/api/rest/_organizations/${id}/members/${ada.userId}`, { role: 'member' }],
      ['DELETE', `/api/rest/_organizations/${id}/members/${ada.userId}`],
      ['POST', `/api/rest/_organizations/${id}/invitations`, { email: uniqueEmail('n'), role: 'member' }],
      ['DELETE', `/api/rest/_organizations/${id}`],
    ];
    const cases: Array<[string, Record<string, string>, number, string]> = [
      ['no token', { 'x-project-id': 'ops', environment: 'master' }, 401, 'AUTH_TOKEN_INVALID'],
      ['a wrong token', { ...good(), authorization: 'Bearer wgm_notarealtoken' }, 401, 'AUTH_TOKEN_INVALID'],
      ["another project's token", { ...good(), authorization: `Bearer ${otherToken}` }, 403, 'FORBIDDEN'],
      ['no environment header', { authorization: `Bearer ${token}`, 'x-project-id': 'ops' }, 400, 'VALIDATION_ERROR'],
    ];
    for (const [label, headers, status, code] of cases) {
      for (const [method, path, body] of endpoints) {
        const r = await new HttpClient(t.url).request(method, path, { headers, body });
        expect([r.status, r.body.error], `${label}: ${method} ${path}`).to.deep.equal([status, code]);
      }
    }
    const staging = admin.with({ environment: 'staging' });
    expect((await staging.get(`/api/rest/_organizations/${id}`)).body.error).to.equal('ORGANIZATION_NOT_FOUND');
    const foreignOwner = await staging.post('/api/rest/_organizations', { name: 'x', ownerId: ada.userId });
    expect([foreignOwner.status, foreignOwner.body.error]).to.deep.equal([404, 'USER_NOT_FOUND']);
    const unknownRole = await admin.post(`/api/rest/_organizations/${id}/members`, { userId: bob.userId, role: 'god' });
    expect([unknownRole.status, unknownRole.body.error]).to.deep.equal([400, 'VALIDATION_ERROR']);
    const badId = await admin.get('/api/rest/_organizations/not-a-uuid');
    expect([badId.status, badId.body.error]).to.deep.equal([400, 'VALIDATION_ERROR']);
    const badCursor = await admin.get('/api/rest/_organizations?cursor=%00junk');
    expect([badCursor.status, badCursor.body.error]).to.deep.equal([400, 'VALIDATION_ERROR']);
    const detail = await admin.get(`/api/rest/_organizations/${id}`);
    expect(detail.body.organization.name).to.equal('Guarded');
    expect(detail.body.members).to.have.length(1);
  });

  it('the CLI twins: create by e-mail, add a member, set a role, remove, delete with --yes; bad input exits 1', async () => {
    const scope = ['--project', 'ops'];
    const created = await walgate(t, ['organizations', 'create', 'Hooli', '--owner', ada.email, ...scope]);
    expect(created.code, created.stderr).to.equal(0);
    const id = JSON.parse(created.stdout).organization.id;
    const added = await walgate(t, ['organizations', 'add-member', id, bob.email, '--role', 'admin', ...scope]);
    expect(added.code, added.stderr).to.equal(0);
    expect(JSON.parse(added.stdout).member).to.include({ email: bob.email, role: 'admin' });
    const sw = await http.post('/auth/organizations/active', { organizationId: id }, bearer(bob.accessToken));
    expect(sw.status).to.equal(200);
    expect((await walgate(t, ['organizations', 'set-role', id, bob.email, 'member', ...scope])).code).to.equal(0);
    const removed = await walgate(t, ['organizations', 'remove-member', id, bob.email, ...scope]);
    expect(removed.code, removed.stderr).to.equal(0);
    // Removed in another process: the api refuses the token once the commit's notification arrives.
    let status = 200;
    for (let i = 0; i < 50 && status === 200; i++) {
      status = (await http.get('/auth/me', bearer(sw.body.accessToken))).status;
      if (status === 200) await new Promise((r) => setTimeout(r, 100));
    }
    expect(status).to.equal(401);
    const lastOwner = await walgate(t, ['organizations', 'remove-member', id, ada.email, ...scope]);
    expect([lastOwner.code, lastOwner.stderr.includes('at least one owner')]).to.deep.equal([1, true]);
    const unknownRole = await walgate(t, ['organizations', 'set-role', id, ada.email, 'god', ...scope]);
    expect([unknownRole.code, unknownRole.stderr.includes('is not a role of this environment')]).to.deep.equal([1, true]);
    const noYes = await walgate(t, ['organizations', 'delete', id, ...scope]);
    expect([noYes.code, noYes.stderr.includes('--yes')]).to.deep.equal([1, true]);
    const listed = await walgate(t, ['organizations', 'list', '--json', ...scope]);
    expect(JSON.parse(listed.stdout).organizations.map((o: any) => o.id)).to.include(id);
    expect((await walgate(t, ['organizations', 'delete', id, '--yes', ...scope])).code).to.equal(0);
    const gone = await walgate(t, ['organizations', 'show', id, ...scope]);
    expect([gone.code, gone.stderr.includes('No organization')]).to.deep.equal([1, true]);
  });
});
