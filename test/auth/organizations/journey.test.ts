import { expect } from 'chai';
import { decodeJwt } from 'jose';
import type { TestApi } from '../../support/api.js';
import type { HttpClient } from '../../support/http.js';
import { bearer, signUpAndConfirm, startAuthApi, uniqueEmail, type Account } from '../support.js';
import { auditRows, createOrganization, invite } from './support.js';

// Organizations end to end over REST, as a B2B app's users live them: Ada creates Acme, invites
// Bob by e-mail (the real SMTP server receives the link), Bob signs up and accepts, switches to
// Acme (his token carries it), gets promoted (seen at his next refresh), is removed (his Acme
// tokens are refused at once, his refresh comes back without Acme). The last owner cannot go.

describe('organizations: create, invite, accept, switch, roles, removal (REST)', function () {
  this.timeout(60_000);
  let t: TestApi;
  let http: HttpClient;
  let ada: Account;
  let acme: string;

  before(async () => {
    t = await startAuthApi();
    ({ http } = await t.provision({ projectId: 'b2b', name: 'master' }));
    ada = await signUpAndConfirm(t, http, uniqueEmail('ada'));
    acme = await createOrganization(http, ada.accessToken, 'Acme');
  });
  after(() => t.close());

  it('the creator is the owner; the list shows it with the role; audit rows organization.created and member.added', async () => {
    const list = await http.get('/auth/organizations', bearer(ada.accessToken));
    expect(list.status).to.equal(200);
    expect(list.body.organizations).to.have.length(1);
    expect(list.body.organizations[0]).to.include({ id: acme, name: 'Acme', role: 'owner' });
    const rows = await auditRows(t, 'b2b', ['organization.created', 'member.added']);
    expect(rows.map((r) => [r.type, r.user_id, r.details.organizationId])).to.deep.equal([
      ['organization.created', ada.userId, acme],
      ['member.added', ada.userId, acme],
    ]);
    expect(rows[1]!.details.role).to.equal('owner');
  });

  it('invite by e-mail → sign up → accept once; the token is bound to the address; switch; role on refresh; removal', async () => {
    const bobEmail = uniqueEmail('bob');
    const sent = await invite(t, http, ada.accessToken, acme, bobEmail);
    expect(sent.invitation).to.include({ email: bobEmail, role: 'member', status: 'pending', organizationId: acme });
    expect(sent.mail.subject).to.contain('Acme');
    expect(sent.mail.text).to.contain('http://walgate.test/?invitation=wgi_');
    expect(sent.token).to.match(/^wgi_[A-Za-z0-9_-]{43}$/);

    // Someone else, signed in, cannot use Bob's invitation; nor can a forged token.
    const carol = await signUpAndConfirm(t, http, uniqueEmail('carol'));
    for (const token of [sent.token, 'wgi_forged', sent.token.slice(0, -1) + (sent.token.endsWith('A') ? 'B' : 'A')]) {
      const r = await http.post('/auth/organizations/invitations/accept', { token }, bearer(carol.accessToken));
      expect([r.status, r.body.error], token).to.deep.equal([400, 'INVITATION_INVALID']);
    }

    // Bob signs up after the invitation was sent, then accepts: once.
    const bob = await signUpAndConfirm(t, http, bobEmail);
    const accepted = await http.post('/auth/organizations/invitations/accept', { token: sent.token }, bearer(bob.accessToken));
    expect(accepted.status, JSON.stringify(accepted.body)).to.equal(200);
    expect(accepted.body.organization).to.include({ id: acme, name: 'Acme', role: 'member' });
    const again = await http.post('/auth/organizations/invitations/accept', { token: sent.token }, bearer(bob.accessToken));
    expect([again.status, again.body.error]).to.deep.equal([400, 'INVITATION_INVALID']);
    const members = await http.get(`/auth/organizations/${acme}`, bearer(bob.accessToken));
    expect(members.body.members.map((m: any) => [m.email, m.role])).to.deep.equal([
      [ada.email, 'owner'],
      [bobEmail, 'member'],
    ]);
    // Members do not see invitations; owners do (the accepted one is no longer open).
    expect(members.body.invitations).to.deep.equal([]);

    // A stranger cannot switch to Acme; Bob can, and his access token carries it.
    const stranger = await http.post('/auth/organizations/active', { organizationId: acme }, bearer(carol.accessToken));
    expect([stranger.status, stranger.body.error]).to.deep.equal([403, 'ORGANIZATION_FORBIDDEN']);
    const switched = await http.post('/auth/organizations/active', { organizationId: acme }, bearer(bob.accessToken));
    expect(switched.status, JSON.stringify(switched.body)).to.equal(200);
    const claims = decodeJwt(switched.body.accessToken);
    expect(claims).to.include({ sub: bob.userId, org_id: acme, org_role: 'member' });
    expect(claims.org_permissions).to.deep.equal([]);
    expect(claims.sid).to.equal(decodeJwt(bob.accessToken).sid);
    expect((await http.get('/auth/me', bearer(switched.body.accessToken))).status).to.equal(200);
    // The session's earlier refresh token counts as used: the new one carries on.
    expect(switched.body.refreshToken).to.not.equal(bob.refreshToken);

    // Promoted to admin: the current token still says member; the next refresh says admin.
    const promoted = await http.patch(`/auth/organizations/${acme}/members/${bob.userId}`, { role: 'admin' }, bearer(ada.accessToken));
    expect(promoted.status, JSON.stringify(promoted.body)).to.equal(200);
    expect(promoted.body.member).to.include({ userId: bob.userId, role: 'admin' });
    expect(decodeJwt(switched.body.accessToken).org_role).to.equal('member');
    const refreshed = await http.post('/auth/refresh-token', { refreshToken: switched.body.refreshToken });
    expect(refreshed.status, JSON.stringify(refreshed.body)).to.equal(200);
    const adminClaims = decodeJwt(refreshed.body.accessToken);
    expect(adminClaims).to.include({ org_id: acme, org_role: 'admin' });
    expect(adminClaims.org_permissions).to.include.members(['members:invite', 'members:manage']);

    // Removed: every token of his that carries Acme is refused from the next request (the
    // revocation list, not expiry); his token without Acme still works, and his refresh answers
    // a pair without Acme.
    const orgToken = refreshed.body.accessToken;
    expect((await http.get('/auth/me', bearer(orgToken))).status).to.equal(200);
    const removed = await http.delete(`/auth/organizations/${acme}/members/${bob.userId}`, bearer(ada.accessToken));
    expect(removed.status, JSON.stringify(removed.body)).to.equal(204);
    for (const token of [orgToken, switched.body.accessToken]) {
      const me = await http.get('/auth/me', bearer(token));
      expect([me.status, me.body.error]).to.deep.equal([401, 'AUTH_TOKEN_INVALID']);
    }
    expect((await http.get('/auth/me', bearer(bob.accessToken))).status).to.equal(200);
    const after = await http.post('/auth/refresh-token', { refreshToken: refreshed.body.refreshToken });
    expect(after.status, JSON.stringify(after.body)).to.equal(200);
    const plain = decodeJwt(after.body.accessToken);
    expect(plain).to.not.have.any.keys('org_id', 'org_role', 'org_permissions', 'org_mid');
    expect((await http.get('/auth/me', bearer(after.body.accessToken))).status).to.equal(200);
    expect((await http.get('/auth/organizations', bearer(bob.accessToken))).body.organizations).to.deep.equal([]);
    // Removed members see nothing of it any more.
    const gone = await http.get(`/auth/organizations/${acme}`, bearer(bob.accessToken));
    expect([gone.status, gone.body.error]).to.deep.equal([404, 'ORGANIZATION_NOT_FOUND']);

    const rows = await auditRows(t, 'b2b', [
      'invitation.sent',
      'invitation.accepted',
      'member.added',
      'member.role_changed',
      'member.removed',
    ]);
    const bobs = rows.filter((r) => r.details.organizationId === acme && (r.user_id === bob.userId || r.details.email === bobEmail));
    expect(bobs.map((r) => r.type)).to.deep.equal([
      'invitation.sent',
      'invitation.accepted',
      'member.added',
      'member.role_changed',
      'member.removed',
    ]);
    expect(bobs[0]!.user_id).to.equal(ada.userId); // the inviter; the invitee has no account yet
    expect(bobs[0]!.details).to.include({ email: bobEmail, role: 'member' });
    expect(bobs[1]!.user_id).to.equal(bob.userId);
    expect(bobs[3]!.details).to.include({ from: 'member', to: 'admin', byUserId: ada.userId });
    expect(bobs[4]!.details).to.include({ role: 'admin', left: false });
  });

  it('the last owner can neither leave nor be demoted (409); with a second owner, they can', async () => {
    const left = await http.delete(`/auth/organizations/${acme}/members/${ada.userId}`, bearer(ada.accessToken));
    expect([left.status, left.body.error]).to.deep.equal([409, 'ORGANIZATION_LAST_OWNER']);
    const demoted = await http.patch(`/auth/organizations/${acme}/members/${ada.userId}`, { role: 'admin' }, bearer(ada.accessToken));
    expect([demoted.status, demoted.body.error]).to.deep.equal([409, 'ORGANIZATION_LAST_OWNER']);

    const org = await createOrganization(http, ada.accessToken, 'Two owners');
    const eve = await signUpAndConfirm(t, http, uniqueEmail('eve'));
    const { token } = await invite(t, http, ada.accessToken, org, eve.email, 'owner');
    expect((await http.post('/auth/organizations/invitations/accept', { token }, bearer(eve.accessToken))).status).to.equal(200);
    // Both owners leave at once: the organization's lock lets exactly one go.
    const both = await Promise.all([
      http.delete(`/auth/organizations/${org}/members/${ada.userId}`, bearer(ada.accessToken)),
      http.delete(`/auth/organizations/${org}/members/${eve.userId}`, bearer(eve.accessToken)),
    ]);
    expect(both.map((r) => r.status).sort()).to.deep.equal([204, 409]);
    const { rows } = await t.ctx.pool.query(
      `SELECT count(*)::int AS n FROM walgate.organization_members WHERE organization_id = $1 AND role = 'owner'`,
      [org],
    );
    expect(rows[0].n).to.equal(1);
  });

  it('roles: a member cannot change an owner (403), an admin cannot make owners (403), an unknown role is 400', async () => {
    const dan = await signUpAndConfirm(t, http, uniqueEmail('dan'));
    const fay = await signUpAndConfirm(t, http, uniqueEmail('fay'));
    const d = await invite(t, http, ada.accessToken, acme, dan.email, 'member');
    const f = await invite(t, http, ada.accessToken, acme, fay.email, 'admin');
    await http.post('/auth/organizations/invitations/accept', { token: d.token }, bearer(dan.accessToken));
    await http.post('/auth/organizations/invitations/accept', { token: f.token }, bearer(fay.accessToken));

    const byMember = await http.patch(`/auth/organizations/${acme}/members/${ada.userId}`, { role: 'member' }, bearer(dan.accessToken));
    expect([byMember.status, byMember.body.error]).to.deep.equal([403, 'ORGANIZATION_FORBIDDEN']);
    const memberInvites = await http.post(
      `/auth/organizations/${acme}/invitations`,
      { email: uniqueEmail('x'), role: 'member' },
      bearer(dan.accessToken),
    );
    expect([memberInvites.status, memberInvites.body.error]).to.deep.equal([403, 'ORGANIZATION_FORBIDDEN']);
    const adminMakesOwner = await http.patch(
      `/auth/organizations/${acme}/members/${dan.userId}`,
      { role: 'owner' },
      bearer(fay.accessToken),
    );
    expect([adminMakesOwner.status, adminMakesOwner.body.error]).to.deep.equal([403, 'ORGANIZATION_FORBIDDEN']);
    const adminRemovesOwner = await http.delete(`/auth/organizations/${acme}/members/${ada.userId}`, bearer(fay.accessToken));
    expect([adminRemovesOwner.status, adminRemovesOwner.body.error]).to.deep.equal([403, 'ORGANIZATION_FORBIDDEN']);
    // An admin manages members who are not owners.
    expect(
      (await http.patch(`/auth/organizations/${acme}/members/${dan.userId}`, { role: 'admin' }, bearer(fay.accessToken))).status,
    ).to.equal(200);

    const unknown = await http.patch(`/auth/organizations/${acme}/members/${dan.userId}`, { role: 'superuser' }, bearer(ada.accessToken));
    expect([unknown.status, unknown.body.error]).to.deep.equal([400, 'VALIDATION_ERROR']);
    expect(unknown.body.violations[0].path).to.equal('role');
    const badAddress = await http.post(
      `/auth/organizations/${acme}/invitations`,
      { email: 'not an address', role: 'member' },
      bearer(ada.accessToken),
    );
    expect([badAddress.status, badAddress.body.error]).to.deep.equal([400, 'VALIDATION_ERROR']);
    const unknownInviteRole = await http.post(
      `/auth/organizations/${acme}/invitations`,
      { email: uniqueEmail('y'), role: 'root' },
      bearer(ada.accessToken),
    );
    expect([unknownInviteRole.status, unknownInviteRole.body.error]).to.deep.equal([400, 'VALIDATION_ERROR']);
    const notAMember = await http.patch(`/auth/organizations/${acme}/members/${ada.userId}x`, { role: 'member' }, bearer(ada.accessToken));
    expect([notAMember.status, notAMember.body.error]).to.deep.equal([400, 'VALIDATION_ERROR']);
    // A member leaves on their own.
    const leaves = await http.delete(`/auth/organizations/${acme}/members/${dan.userId}`, bearer(dan.accessToken));
    expect(leaves.status).to.equal(204);
    const [leftRow] = (await auditRows(t, 'b2b', ['member.removed'])).filter((r) => r.user_id === dan.userId);
    expect(leftRow!.details).to.include({ left: true });
  });

  it('invitations: listed for owners, revocable (the link stops working), expiring, never to a member', async () => {
    const gus = await signUpAndConfirm(t, http, uniqueEmail('gus'));
    const revoked = await invite(t, http, ada.accessToken, acme, gus.email);
    const expiring = await invite(t, http, ada.accessToken, acme, gus.email);
    const listed = await http.get(`/auth/organizations/${acme}`, bearer(ada.accessToken));
    expect(listed.body.invitations.map((i: any) => i.id)).to.include.members([revoked.invitation.id, expiring.invitation.id]);
    const r = await http.delete(`/auth/organizations/${acme}/invitations/${revoked.invitation.id}`, bearer(ada.accessToken));
    expect(r.status).to.equal(200);
    expect(r.body.invitation.status).to.equal('revoked');
    const twice = await http.delete(`/auth/organizations/${acme}/invitations/${revoked.invitation.id}`, bearer(ada.accessToken));
    expect([twice.status, twice.body.error]).to.deep.equal([404, 'INVITATION_NOT_FOUND']);
    const useRevoked = await http.post('/auth/organizations/invitations/accept', { token: revoked.token }, bearer(gus.accessToken));
    expect([useRevoked.status, useRevoked.body.error]).to.deep.equal([400, 'INVITATION_INVALID']);

    t.clock.advanceSeconds(7 * 86_400 + 1);
    try {
      // Past its lifetime (7 days by default); a fresh login, as the old access token expired too.
      const login = await http.post('/auth/login', { email: gus.email, password: gus.password });
      const useExpired = await http.post(
        '/auth/organizations/invitations/accept',
        { token: expiring.token },
        bearer(login.body.accessToken),
      );
      expect([useExpired.status, useExpired.body.error]).to.deep.equal([400, 'INVITATION_INVALID']);
    } finally {
      t.clock.advanceSeconds(-(7 * 86_400 + 1));
    }
    const toMember = await http.post(
      `/auth/organizations/${acme}/invitations`,
      { email: ada.email, role: 'member' },
      bearer(ada.accessToken),
    );
    expect([toMember.status, toMember.body.error]).to.deep.equal([409, 'ORGANIZATION_MEMBER_EXISTS']);
  });

  it('renames (owners and admins) and deletes (owners; soft, audited; members’ organization tokens refused)', async () => {
    const org = await createOrganization(http, ada.accessToken, 'Short-lived');
    const hal = await signUpAndConfirm(t, http, uniqueEmail('hal'));
    const { token } = await invite(t, http, ada.accessToken, org, hal.email);
    await http.post('/auth/organizations/invitations/accept', { token }, bearer(hal.accessToken));
    const halOrg = await http.post('/auth/organizations/active', { organizationId: org }, bearer(hal.accessToken));
    const renamed = await http.patch(`/auth/organizations/${org}`, { name: 'Longer-lived' }, bearer(ada.accessToken));
    expect([renamed.status, renamed.body.organization.name]).to.deep.equal([200, 'Longer-lived']);
    const byMember = await http.delete(`/auth/organizations/${org}`, bearer(hal.accessToken));
    expect([byMember.status, byMember.body.error]).to.deep.equal([403, 'ORGANIZATION_FORBIDDEN']);
    expect((await http.delete(`/auth/organizations/${org}`, bearer(ada.accessToken))).status).to.equal(204);
    expect((await http.get('/auth/me', bearer(halOrg.body.accessToken))).status).to.equal(401);
    const refreshed = await http.post('/auth/refresh-token', { refreshToken: halOrg.body.refreshToken });
    expect(decodeJwt(refreshed.body.accessToken)).to.not.have.property('org_id');
    expect((await http.get(`/auth/organizations/${org}`, bearer(ada.accessToken))).status).to.equal(404);
    const { rows } = await t.ctx.pool.query('SELECT deleted_at FROM walgate.organizations WHERE id = $1', [org]);
    expect(rows[0].deleted_at).to.be.instanceOf(Date);
    const types = (await auditRows(t, 'b2b', ['organization.renamed', 'organization.deleted'])).filter(
      (r) => r.details.organizationId === org,
    );
    expect(types.map((r) => r.type)).to.deep.equal(['organization.renamed', 'organization.deleted']);
  });
});
