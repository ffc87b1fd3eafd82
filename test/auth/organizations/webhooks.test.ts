import { expect } from 'chai';
import { startPipeline, type Pipeline } from '../../delivery/support.js';
import { HttpClient } from '../../support/http.js';
import { verifies } from '../../support/receiver.js';
import { bearer, GENEROUS_LIMITS, signUpAndConfirm, uniqueEmail } from '../support.js';
import { createOrganization, invite } from './support.js';

// Every organization change is an audit row, and so a delivery of a subscription on `_auth_events`
// (captured from the WAL like any table): one signed delivery per change, in commit order.

const SECRET = 'whsec_' + Buffer.alloc(32, 9).toString('base64');
const ORGANIZATION_EVENTS = [
  'organization.created',
  'member.added',
  'invitation.sent',
  'invitation.accepted',
  'member.role_changed',
  'member.removed',
];

describe('organizations: each change delivered as an `_auth_events` webhook', function () {
  this.timeout(120_000);
  let p: Pipeline;

  before(async () => {
    p = await startPipeline({}, {}, { rateLimits: GENEROUS_LIMITS });
  });
  after(() => p.close());

  it('organization.created, member.added, invitation.sent, invitation.accepted, member.role_changed, member.removed', async () => {
    const http = p.t.http.with({ 'x-project-id': 'shop', environment: 'master' });
    const manage = new HttpClient(p.t.url, {
      authorization: `Bearer ${await p.t.managementToken('shop')}`,
      'x-project-id': 'shop',
      environment: 'master',
    });
    const ada = await signUpAndConfirm(p.t, http, uniqueEmail('ada'));
    const bob = await signUpAndConfirm(p.t, http, uniqueEmail('bob'));
    // Subscribed after the sign-ups: only what follows is delivered.
    const hook = await manage.post('/api/rest/_webhooks', {
      projectId: 'shop',
      environment: 'master',
      table: '_auth_events',
      events: ['INSERT'],
      url: `${p.receiver.url}/orgs`,
      secret: SECRET,
    });
    expect(hook.status, JSON.stringify(hook.body)).to.equal(201);

    const org = await createOrganization(http, ada.accessToken, 'Wayne Enterprises');
    const { token } = await invite(p.t, http, ada.accessToken, org, bob.email);
    expect((await http.post('/auth/organizations/invitations/accept', { token }, bearer(bob.accessToken))).status).to.equal(200);
    expect(
      (await http.patch(`/auth/organizations/${org}/members/${bob.userId}`, { role: 'admin' }, bearer(ada.accessToken))).status,
    ).to.equal(200);
    expect((await http.delete(`/auth/organizations/${org}/members/${bob.userId}`, bearer(ada.accessToken))).status).to.equal(204);
    // A refused change (the last owner) commits nothing, so nothing is delivered for it.
    expect((await http.delete(`/auth/organizations/${org}/members/${ada.userId}`, bearer(ada.accessToken))).status).to.equal(409);

    const { rows } = await p.t.ctx.pool.query(
      `SELECT count(*)::int AS n FROM walgate.auth_events WHERE project_id = 'shop' AND details->>'organizationId' = $1`,
      [org],
    );
    expect(rows[0].n).to.equal(7);
    await p.receiver.waitFor(7, 30_000);
    const records = p.receiver.requests.map((r) => {
      expect(verifies(SECRET, r)).to.equal(true);
      return JSON.parse(r.body);
    });
    expect(records.every((b) => b.table === '_auth_events' && b.event === 'INSERT')).to.equal(true);
    const ours = records.map((b) => b.record).filter((r) => r.details.organizationId === org);
    expect(ours.map((r) => r.type)).to.deep.equal([
      'organization.created',
      'member.added',
      'invitation.sent',
      'invitation.accepted',
      'member.added',
      'member.role_changed',
      'member.removed',
    ]);
    expect(new Set(ours.map((r) => r.type))).to.deep.equal(new Set(ORGANIZATION_EVENTS));
    expect(ours.find((r) => r.type === 'member.role_changed').details).to.include({ from: 'member', to: 'admin' });
    expect(ours.find((r) => r.type === 'member.removed').user_id).to.equal(bob.userId);
  });
});
