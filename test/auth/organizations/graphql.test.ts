import { expect } from 'chai';
import { decodeJwt } from 'jose';
import type { TestApi } from '../../support/api.js';
import type { HttpClient } from '../../support/http.js';
import { graphqlCall } from '../../graphql/transports.js';
import { signUpAndConfirm, startAuthApi, uniqueEmail, type Account } from '../support.js';
import { invitationTokenIn } from './support.js';

// The organization journey through POST /graphql: the same service, rules and errors as REST
// (errors in extensions.code), including the e-mail through the test SMTP server, the token's
// claims, the role seen after a refresh and the removal refused on the next request.

const ORG = 'id name role createdAt updatedAt';
const PAIR = 'accessToken refreshToken tokenType expiresIn';

const gql = (http: HttpClient, field: string, selection: string, inputType: string, input: Record<string, unknown>, token?: string) =>
  graphqlCall(http, field, `mutation($input: ${inputType}!) { ${field}(input: $input) { ${selection} } }`, { input }, token);

describe('organizations: the GraphQL twins', function () {
  this.timeout(60_000);
  let t: TestApi;
  let http: HttpClient;
  let ada: Account;
  let bob: Account;

  before(async () => {
    t = await startAuthApi();
    ({ http } = await t.provision({ projectId: 'gql', name: 'master' }));
    ada = await signUpAndConfirm(t, http, uniqueEmail('ada'));
    bob = await signUpAndConfirm(t, http, uniqueEmail('bob'));
  });
  after(() => t.close());

  it('create, invite (e-mail), accept once, switch (claims), role after refresh, removal refused on the next request, last owner', async () => {
    const created = await gql(
      http,
      'createOrganization',
      `organization { ${ORG} }`,
      'CreateOrganizationInput',
      { name: 'Umbrella' },
      ada.accessToken,
    );
    expect(created.code, JSON.stringify(created.details)).to.equal(null);
    const id = created.body.organization.id;
    expect(created.body.organization).to.include({ name: 'Umbrella', role: 'owner' });
    const list = await graphqlCall(http, 'organizations', `{ organizations { organizations { ${ORG} } } }`, undefined, ada.accessToken);
    expect(list.body.organizations.map((o: any) => o.id)).to.deep.equal([id]);

    const before = t.smtp.to(bob.email).length;
    const invited = await gql(
      http,
      'inviteMember',
      'invitation { id email role status }',
      'InviteMemberInput',
      { organizationId: id, email: bob.email, role: 'member' },
      ada.accessToken,
    );
    expect(invited.code, JSON.stringify(invited.details)).to.equal(null);
    expect(invited.body.invitation).to.include({ email: bob.email, status: 'pending' });
    const token = invitationTokenIn(await t.smtp.waitFor(bob.email, { after: before }));
    const byAda = await gql(http, 'acceptInvitation', 'organization { id }', 'AcceptInvitationInput', { token }, ada.accessToken);
    expect(byAda.code).to.equal('INVITATION_INVALID');
    const accepted = await gql(http, 'acceptInvitation', `organization { ${ORG} }`, 'AcceptInvitationInput', { token }, bob.accessToken);
    expect(accepted.code, JSON.stringify(accepted.details)).to.equal(null);
    expect(accepted.body.organization).to.include({ id, role: 'member' });
    expect((await gql(http, 'acceptInvitation', 'organization { id }', 'AcceptInvitationInput', { token }, bob.accessToken)).code).to.equal(
      'INVITATION_INVALID',
    );

    const detail = await graphqlCall(
      http,
      'organization',
      'query($id: ID!) { organization(id: $id) { organization { id } members { userId role } invitations { id } } }',
      { id },
      bob.accessToken,
    );
    expect(detail.body.members.map((m: any) => m.role)).to.deep.equal(['owner', 'member']);

    const switched = await gql(http, 'switchOrganization', PAIR, 'SwitchOrganizationInput', { organizationId: id }, bob.accessToken);
    expect(switched.code, JSON.stringify(switched.details)).to.equal(null);
    expect(decodeJwt(switched.body.accessToken)).to.include({ org_id: id, org_role: 'member' });
    const unknownRole = await gql(
      http,
      'changeMemberRole',
      'member { role }',
      'ChangeMemberRoleInput',
      { organizationId: id, userId: bob.userId, role: 'boss' },
      ada.accessToken,
    );
    expect(unknownRole.code).to.equal('VALIDATION_ERROR');
    const promoted = await gql(
      http,
      'changeMemberRole',
      'member { userId role }',
      'ChangeMemberRoleInput',
      { organizationId: id, userId: bob.userId, role: 'admin' },
      ada.accessToken,
    );
    expect(promoted.body.member).to.include({ role: 'admin' });
    const refreshed = await gql(http, 'refreshToken', PAIR, 'RefreshTokenInput', { refreshToken: switched.body.refreshToken });
    expect(decodeJwt(refreshed.body.accessToken)).to.include({ org_id: id, org_role: 'admin' });

    const removed = await gql(
      http,
      'removeMember',
      'message',
      'RemoveMemberInput',
      { organizationId: id, userId: bob.userId },
      ada.accessToken,
    );
    expect(removed.code, JSON.stringify(removed.details)).to.equal(null);
    const me = await graphqlCall(http, 'me', '{ me { user { id } } }', undefined, refreshed.body.accessToken);
    expect(me.code).to.equal('AUTH_TOKEN_INVALID');
    const after = await gql(http, 'refreshToken', PAIR, 'RefreshTokenInput', { refreshToken: refreshed.body.refreshToken });
    expect(decodeJwt(after.body.accessToken)).to.not.have.property('org_id');

    const lastOwner = await gql(
      http,
      'removeMember',
      'message',
      'RemoveMemberInput',
      { organizationId: id, userId: ada.userId },
      ada.accessToken,
    );
    expect(lastOwner.code).to.equal('ORGANIZATION_LAST_OWNER');
    const stranger = await gql(http, 'switchOrganization', PAIR, 'SwitchOrganizationInput', { organizationId: id }, bob.accessToken);
    expect(stranger.code).to.equal('ORGANIZATION_FORBIDDEN');
    const badId = await gql(http, 'switchOrganization', PAIR, 'SwitchOrganizationInput', { organizationId: 'nope' }, bob.accessToken);
    expect(badId.code).to.equal('VALIDATION_ERROR');
    const deleted = await gql(http, 'deleteOrganization', 'message', 'OrganizationIdInput', { organizationId: id }, ada.accessToken);
    expect(deleted.code).to.equal(null);

    const { rows } = await t.ctx.pool.query(
      `SELECT type FROM walgate.auth_events WHERE project_id = 'gql' AND details->>'organizationId' = $1 ORDER BY seq`,
      [id],
    );
    expect(rows.map((r: any) => r.type)).to.deep.equal([
      'organization.created',
      'member.added',
      'invitation.sent',
      'invitation.accepted',
      'member.added',
      'member.role_changed',
      'member.removed',
      'organization.deleted',
    ]);
  });
});
