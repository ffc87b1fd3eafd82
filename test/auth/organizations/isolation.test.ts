import { expect } from 'chai';
import { decodeJwt } from 'jose';
import type { TestApi } from '../../support/api.js';
import { HttpClient } from '../../support/http.js';
import { bearer, signUpAndConfirm, startAuthApi, uniqueEmail, type Account } from '../support.js';
import { createOrganization, invite } from './support.js';

// An organization belongs to one project environment: another project's (or environment's) user
// with the invited address can neither accept, see nor switch to it. Environment-defined roles and
// the limits are settings of the environment.

describe('organizations: isolation between projects and environments, environment roles, limits', function () {
  this.timeout(60_000);
  let t: TestApi;
  let http: HttpClient;
  let rival: HttpClient;
  let staging: HttpClient;
  let ada: Account;
  let acme: string;
  let manage: HttpClient;

  before(async () => {
    t = await startAuthApi();
    ({ http } = await t.provision({ projectId: 'b2b', name: 'master' }));
    ({ http: staging } = await t.provision({ projectId: 'b2b', name: 'staging' }));
    ({ http: rival } = await t.provision({ projectId: 'rival', name: 'master' }));
    ada = await signUpAndConfirm(t, http, uniqueEmail('ada'));
    acme = await createOrganization(http, ada.accessToken, 'Acme');
    manage = new HttpClient(t.url, {
      authorization: `Bearer ${await t.managementToken('b2b')}`,
      'x-project-id': 'b2b',
      environment: 'master',
    });
  });
  after(() => t.close());

  it("another project's or environment's user with the invited address can never accept, see or switch to it", async () => {
    const email = uniqueEmail('zed');
    const { token } = await invite(t, http, ada.accessToken, acme, email);
    for (const [label, client] of [
      ['another project', rival],
      ['another environment', staging],
    ] as const) {
      const zed = await signUpAndConfirm(t, client, email);
      const accept = await client.post('/auth/organizations/invitations/accept', { token }, bearer(zed.accessToken));
      expect([accept.status, accept.body.error], label).to.deep.equal([400, 'INVITATION_INVALID']);
      const get = await client.get(`/auth/organizations/${acme}`, bearer(zed.accessToken));
      expect([get.status, get.body.error], label).to.deep.equal([404, 'ORGANIZATION_NOT_FOUND']);
      const sw = await client.post('/auth/organizations/active', { organizationId: acme }, bearer(zed.accessToken));
      expect([sw.status, sw.body.error], label).to.deep.equal([403, 'ORGANIZATION_FORBIDDEN']);
      const invites = await client.post(
        `/auth/organizations/${acme}/invitations`,
        { email: zed.email, role: 'owner' },
        bearer(zed.accessToken),
      );
      expect([invites.status, invites.body.error], label).to.deep.equal([404, 'ORGANIZATION_NOT_FOUND']);
      expect((await client.get('/auth/organizations', bearer(zed.accessToken))).body.organizations, label).to.deep.equal([]);
      // Ada's token is not a token of that environment at all.
      expect((await client.get('/auth/organizations', bearer(ada.accessToken))).status, label).to.equal(401);
    }
    // The invitation is still there for the right user in the right environment.
    const zed = await signUpAndConfirm(t, http, email);
    expect((await http.post('/auth/organizations/invitations/accept', { token }, bearer(zed.accessToken))).status).to.equal(200);
    const { rows } = await t.ctx.pool.query(
      `SELECT u.project_id, u.environment FROM walgate.organization_members m JOIN walgate.users u ON u.id = m.user_id WHERE m.organization_id = $1`,
      [acme],
    );
    expect(rows.every((r: any) => r.project_id === 'b2b' && r.environment === 'master')).to.equal(true);
  });

  it('an environment role carries its named permissions in the token; built-in names and bad permissions are refused', async () => {
    const roles = [{ name: 'billing', permissions: ['invoices:read', 'invoices:pay'] }];
    const set = await manage.patch('/api/rest/_environment', { organizations: { roles } });
    expect(set.status, JSON.stringify(set.body)).to.equal(200);
    expect(set.body.organizations.roles).to.deep.equal(roles);
    for (const bad of [
      [{ name: 'owner', permissions: [] }],
      [{ name: 'ok', permissions: ['has space'] }],
      [{ name: 'ok', permissions: Array(33).fill('p') }],
    ]) {
      const r = await manage.patch('/api/rest/_environment', { organizations: { roles: bad } });
      expect([r.status, r.body.error], JSON.stringify(bad)).to.deep.equal([400, 'VALIDATION_ERROR']);
    }
    const bea = await signUpAndConfirm(t, http, uniqueEmail('bea'));
    const { token } = await invite(t, http, ada.accessToken, acme, bea.email, 'billing');
    await http.post('/auth/organizations/invitations/accept', { token }, bearer(bea.accessToken));
    const sw = await http.post('/auth/organizations/active', { organizationId: acme }, bearer(bea.accessToken));
    expect(sw.status, JSON.stringify(sw.body)).to.equal(200);
    const claims = decodeJwt(sw.body.accessToken);
    expect(claims).to.include({ org_id: acme, org_role: 'billing' });
    expect(claims.org_permissions).to.deep.equal(['invoices:read', 'invoices:pay']);
    // An environment role does not manage the organization.
    const inv = await http.post(
      `/auth/organizations/${acme}/invitations`,
      { email: uniqueEmail('q'), role: 'member' },
      bearer(bea.accessToken),
    );
    expect([inv.status, inv.body.error]).to.deep.equal([403, 'ORGANIZATION_FORBIDDEN']);
  });

  it('limits: organizations per user and members per organization (409), invitations per organization per hour (429)', async () => {
    const { http: small } = await t.provision({ projectId: 'small', name: 'master' });
    const admin = new HttpClient(t.url, {
      authorization: `Bearer ${await t.managementToken('small')}`,
      'x-project-id': 'small',
      environment: 'master',
    });
    const limits = { maxOrganizationsPerUser: 1, maxMembers: 2, invitationsPerHour: 3 };
    expect((await admin.patch('/api/rest/_environment', { organizations: limits })).status).to.equal(200);
    const owner = await signUpAndConfirm(t, small, uniqueEmail('own'));
    const org = await createOrganization(small, owner.accessToken, 'One');
    const second = await small.post('/auth/organizations', { name: 'Two' }, bearer(owner.accessToken));
    expect([second.status, second.body.error]).to.deep.equal([409, 'ORGANIZATION_LIMIT_REACHED']);

    const a = await signUpAndConfirm(t, small, uniqueEmail('a'));
    const b = await signUpAndConfirm(t, small, uniqueEmail('b'));
    const ia = await invite(t, small, owner.accessToken, org, a.email);
    const ib = await invite(t, small, owner.accessToken, org, b.email);
    await invite(t, small, owner.accessToken, org, uniqueEmail('c'));
    const fourth = await small.post(
      `/auth/organizations/${org}/invitations`,
      { email: uniqueEmail('d'), role: 'member' },
      bearer(owner.accessToken),
    );
    expect([fourth.status, fourth.body.error]).to.deep.equal([429, 'RATE_LIMIT_EXCEEDED']);
    expect(Number(fourth.headers.get('retry-after'))).to.be.within(1, 3600);
    expect((await small.post('/auth/organizations/invitations/accept', { token: ia.token }, bearer(a.accessToken))).status).to.equal(200);
    const full = await small.post('/auth/organizations/invitations/accept', { token: ib.token }, bearer(b.accessToken));
    expect([full.status, full.body.error]).to.deep.equal([409, 'ORGANIZATION_LIMIT_REACHED']);
    // Nothing of the refused acceptance stays: the invitation is still open.
    const { rows } = await t.ctx.pool.query('SELECT accepted_at FROM walgate.organization_invitations WHERE id = $1', [ib.invitation.id]);
    expect(rows[0].accepted_at).to.equal(null);
    // An hour later the organization may invite again.
    t.clock.advanceSeconds(3601);
    try {
      const fresh = await signUpAndConfirm(t, small, uniqueEmail('e'));
      const again = await small.post(
        `/auth/organizations/${org}/invitations`,
        { email: uniqueEmail('f'), role: 'member' },
        bearer(fresh.accessToken),
      );
      expect(again.status).to.equal(404); // not a member: the organization does not exist for them
      const login = await small.post('/auth/login', { email: owner.email, password: owner.password });
      const ok = await small.post(
        `/auth/organizations/${org}/invitations`,
        { email: uniqueEmail('g'), role: 'member' },
        bearer(login.body.accessToken),
      );
      expect(ok.status).to.equal(201);
    } finally {
      t.clock.advanceSeconds(-3601);
    }
  });
});
