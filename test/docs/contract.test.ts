// No delivery worker or tailer runs in this file: the public address below is only validated,
// never contacted (this machine has no network beyond the package registries).
import { createHash } from 'node:crypto';
import { expect } from 'chai';
import { GENEROUS_LIMITS, PASSWORD, signUpAndConfirm, startAuthApi, uniqueEmail } from '../auth/support.js';
import { invitationTokenIn } from '../auth/organizations/support.js';
import type { TestApi } from '../support/api.js';
import { HttpClient } from '../support/http.js';
import { ContractClient, documentedOperations } from '../support/openapi.js';
import { codeIn } from '../support/smtp.js';
import { SoftwarePasskey } from '../support/passkey.js';
import { claimsOf, totp } from '../auth/mfa/support.js';

// The api as a client generated from /openapi.json sees it: every answer below — successes, and
// the failures a client can provoke — is checked against the document (status documented for the
// operation, body matching its schema without undocumented fields, documented headers present).

const HOOK_URL = 'https://93.184.216.34/hooks/orders';
const SECRET = 'whsec-contract-secret-0001';

describe('OpenAPI document: the api answers as documented', function () {
  this.timeout(60_000);
  let t: TestApi;
  let doc: Record<string, any>;
  let user: ContractClient; // project headers
  let manager: ContractClient; // management token and headers
  let otherToken: string;

  before(async () => {
    t = await startAuthApi({
      // One recovery request per address and minute, so that the 429 is reachable.
      overrides: { rateLimits: { ...GENEROUS_LIMITS, recoverPassword: { name: 'recover-password', points: 1, durationSeconds: 60 } } },
    });
    await t.provision({ projectId: 'shop', name: 'master' });
    await t.provision({ projectId: 'other', name: 'master' });
    await t.ctx.pool.query('CREATE TABLE shop_master.orders (id int PRIMARY KEY, status text)');
    doc = (await t.http.get('/openapi.json')).body;
    user = new ContractClient(doc, new HttpClient(t.url, { 'x-project-id': 'shop' }));
    const token = await t.managementToken('shop');
    otherToken = await t.managementToken('other');
    manager = new ContractClient(doc, new HttpClient(t.url, { authorization: `Bearer ${token}`, 'x-project-id': 'shop', environment: 'master' }));
  });
  after(() => t.close());

  const bearer = (token: string) => ({ headers: { authorization: `Bearer ${token}` } });

  async function mailedCode(email: string, after: number): Promise<string> {
    return codeIn(await t.smtp.waitFor(email, { after }));
  }

  it('sign-up, confirmation, login, me, refresh, logout', async () => {
    const email = uniqueEmail('contract');
    expect((await user.call('signup', { body: { email, password: PASSWORD, name: 'Ada' } })).status).to.equal(201);
    expect((await user.call('signup', { body: { email, password: PASSWORD } })).body.error).to.equal('AUTH_EMAIL_EXISTS');
    expect((await user.call('signup', { body: { email: uniqueEmail(), password: 'password' } })).body.error).to.equal('VALIDATION_ERROR');
    expect((await user.call('login', { body: { email, password: PASSWORD } })).body.error).to.equal('AUTH_EMAIL_NOT_VERIFIED');
    expect((await user.call('confirmSignup', { body: { email, code: '000000' } })).body.error).to.equal('AUTH_INVALID_CODE');
    const confirmed = await user.call('confirmSignup', { body: { email, code: await mailedCode(email, 0) } });
    expect(confirmed.status).to.equal(200);

    expect((await user.call('login', { body: { email, password: 'not the password at all' } })).body.error).to.equal('AUTH_INVALID_CREDENTIALS');
    const login = await user.call('login', { body: { email, password: PASSWORD } });
    expect(login.status).to.equal(200);
    expect((await user.call('me', bearer(login.body.accessToken))).status).to.equal(200);
    expect((await user.call('me')).body.error).to.equal('AUTH_TOKEN_INVALID');

    const refreshed = await user.call('refreshToken', { body: { refreshToken: login.body.refreshToken } });
    expect(refreshed.status).to.equal(200);
    // The user's sessions: listed, one ended; a new signup code on request.
    const listed = await user.call('sessions', bearer(refreshed.body.accessToken));
    expect(listed.status).to.equal(200);
    const other = await user.call('login', { body: { email, password: PASSWORD } });
    const otherId = (await user.call('sessions', bearer(other.body.accessToken))).body.sessions.find((s: { current: boolean }) => s.current).id;
    expect((await user.call('endSession', { params: { id: otherId }, ...bearer(refreshed.body.accessToken) })).status).to.equal(200);
    expect((await user.call('resendConfirmation', { body: { email } })).status).to.equal(200);
    t.clock.advanceSeconds(t.config.refreshReuseGraceSeconds + 1);
    expect((await user.call('refreshToken', { body: { refreshToken: login.body.refreshToken } })).body.error).to.equal('AUTH_TOKEN_INVALID');


    const again = await user.call('login', { body: { email, password: PASSWORD } });
    expect((await user.call('logout', bearer(again.body.accessToken))).status).to.equal(200);
    expect((await user.call('logout', bearer(again.body.accessToken))).body.error).to.equal('AUTH_TOKEN_INVALID');

    t.clock.advanceSeconds(16 * 60);
    expect((await user.call('me', bearer(confirmed.body.accessToken))).body.error).to.equal('AUTH_TOKEN_EXPIRED');
  });

  it('recovery, reset, rate limit, lockout', async () => {
    const email = uniqueEmail('recover');
    await user.call('signup', { body: { email, password: PASSWORD } });
    await user.call('confirmSignup', { body: { email, code: await mailedCode(email, 0) } });
    expect((await user.call('recoverPassword', { body: { email } })).status).to.equal(200);
    const limited = await user.call('recoverPassword', { body: { email } });
    expect(limited.body.error).to.equal('RATE_LIMIT_EXCEEDED');
    expect(Number(limited.headers.get('retry-after'))).to.be.greaterThan(0);
    const code = await mailedCode(email, 1);
    expect((await user.call('resetPassword', { body: { email, code: code === '000000' ? '111111' : '000000', newPassword: `${PASSWORD} new` } })).body.error).to.equal(
      'AUTH_INVALID_CODE',
    );
    expect((await user.call('resetPassword', { body: { email, code, newPassword: `${PASSWORD} new` } })).status).to.equal(200);

    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) statuses.push((await user.call('login', { body: { email, password: 'wrong wrong wrong' } })).status);
    expect(statuses).to.deep.equal([401, 401, 401, 401, 423]);
  });

  it('the key set, by headers or by query', async () => {
    expect((await user.call('jwks')).status).to.equal(200);
    const anonymous = new ContractClient(doc, new HttpClient(t.url));
    expect((await anonymous.call('jwks', { query: { projectId: 'shop', environment: 'master' } })).body.keys).to.have.length.greaterThan(0);
    expect((await anonymous.call('jwks', { query: { projectId: 'nobody' } })).body.error).to.equal('AUTH_NOT_CONFIGURED');
    mergeSeen(anonymous);
  });

  it('webhook subscriptions: create, list, get, update, replay, delete', async () => {
    const body = { projectId: 'shop', environment: 'master', table: 'orders', events: ['INSERT'], url: HOOK_URL, secret: SECRET, filter: { status: 'paid' } };
    expect((await manager.call('getEnvironment')).body.lockoutThreshold).to.equal(5);
    expect((await manager.call('updateEnvironment', { body: { corsOrigins: ['https://shop.example'] } })).body.corsOrigins).to.deep.equal(['https://shop.example']);
    const created = await manager.call('createWebhook', { body });
    expect(created.status).to.equal(201);
    const id = created.body.webhook.id as string;
    expect((await manager.call('createWebhook', { body: { ...body, url: 'http://93.184.216.34/' } })).body.error).to.equal('VALIDATION_ERROR');
    expect((await manager.call('listWebhooks', { query: { limit: '1' } })).body.webhooks).to.have.length(1);
    // A dead letter and the change it carries (a parked delivery keeps it, so it can be sent again).
    await t.ctx.pool.query(
      `INSERT INTO walgate.events (id, schema_name, table_name, operation, committed_at, columns, record, changed_fields)
       VALUES ('evt_contract', 'shop_master', 'orders', 'INSERT', now(), '{id}', '{1}', '{}')`,
    );
    await t.ctx.pool.query(
      `INSERT INTO walgate.deliveries (id, webhook_id, event_id, event_type, status, attempts, http_status, last_error, next_attempt_at, created_at)
       VALUES ('del_contract', $1, 'evt_contract', 'INSERT', 'dead', 5, 500, 'HTTP 500', now(), now())`,
      [id],
    );
    expect((await manager.call('getWebhook', { params: { id } })).body.deliveries).to.have.length(1);
    expect((await manager.call('updateWebhook', { params: { id }, body: { active: false, select: ['id'] } })).body.webhook.active).to.equal(false);
    expect((await manager.call('updateWebhook', { params: { id }, body: { ordering: 'row' } })).body.webhook.ordering).to.equal('row');
    expect((await manager.call('updateWebhook', { params: { id }, body: { ordering: 'rows' } })).body.error).to.equal('VALIDATION_ERROR');
    expect((await manager.call('updateWebhook', { params: { id }, body: { ordering: { by: ['id'] } } })).body.webhook.ordering).to.deep.equal({
      by: ['id'],
    });
    expect((await manager.call('getWebhook', { params: { id } })).body.webhook.ordering).to.deep.equal({ by: ['id'] });
    expect((await manager.call('updateWebhook', { params: { id }, body: { ordering: { by: [] } } })).body.error).to.equal('VALIDATION_ERROR');
    expect((await manager.call('replayWebhook', { params: { id }, body: { dryRun: true } })).body).to.deep.equal({ replayed: 1 });
    const replayed = (await manager.call('replayWebhook', { params: { id }, body: {} })).body;
    expect(replayed).to.deep.include({ replayed: 1 });
    expect((await manager.call('getReplay', { params: { id, replayId: replayed.replay.id } })).body.replay).to.include({ state: 'done', count: 1 });
    expect((await manager.call('getReplay', { params: { id, replayId: 'rpl_nope' } })).body.error).to.equal('REPLAY_NOT_FOUND');
    expect((await manager.call('replayWebhook', { params: { id } })).status, 'the body is optional').to.equal(202);
    expect((await manager.call('getWebhook', { params: { id } })).body.health.breaker.state).to.equal('closed');
    expect((await manager.call('listWebhookTables')).body.tables.map((t: { name: string }) => t.name)).to.deep.equal(['orders']);
    expect((await manager.call('listDeliveries', { params: { id }, query: { status: 'pending' } })).body.deliveries).to.have.length(1);
    expect((await manager.call('listDeliveries', { params: { id }, query: { status: 'lost' } })).body.error).to.equal('VALIDATION_ERROR');
    const deliveryId = 'del_contract';
    expect((await manager.call('getDelivery', { params: { id, deliveryId } })).body.delivery.attemptLog).to.deep.equal([]);
    expect((await manager.call('getDelivery', { params: { id, deliveryId: 'del_nope' } })).body.error).to.equal('DELIVERY_NOT_FOUND');
    expect((await manager.call('retryDelivery', { params: { id, deliveryId } })).body.error, 'pending').to.equal('DELIVERY_NOT_FINISHED');
    await t.ctx.pool.query(`UPDATE walgate.deliveries SET status = 'delivered', delivered_at = now() WHERE id = $1`, [deliveryId]);
    expect((await manager.call('retryDelivery', { params: { id, deliveryId } })).body.delivery.status).to.equal('pending');
    expect((await manager.call('retryDelivery', { params: { id, deliveryId: 'del_nope' } })).body.error).to.equal('DELIVERY_NOT_FOUND');
    await t.ctx.pool.query(
      `INSERT INTO walgate.deliveries (id, webhook_id, event_id, event_type, status, attempts, http_status, next_attempt_at, created_at, delivered_at)
       VALUES ('del_first_try', $1, 'evt_not_stored', 'INSERT', 'delivered', 1, 200, now(), now(), now())`,
      [id],
    );
    expect((await manager.call('retryDelivery', { params: { id, deliveryId: 'del_first_try' } })).body.error).to.equal('DELIVERY_PAYLOAD_GONE');
    expect((await manager.call('discardDelivery', { params: { id, deliveryId: 'del_first_try' } })).body.error).to.equal('DELIVERY_NOT_HELD');
    await t.ctx.pool.query(`UPDATE walgate.deliveries SET status = 'dead', holds_row = true, order_key = 'k' WHERE id = 'del_first_try'`);
    expect((await manager.call('discardDelivery', { params: { id, deliveryId: 'del_first_try' } })).body.delivery.holdsRow).to.equal(false);
    expect((await manager.call('discardDelivery', { params: { id, deliveryId: 'del_nope' } })).body.error).to.equal('DELIVERY_NOT_FOUND');
    expect((await manager.call('getDeliveryMinutes', { params: { id } })).body.minutes).to.have.length(60);
    expect((await manager.call('getWebhookHealth', { params: { id } })).body.windows).to.have.length(2);
    expect((await manager.call('listEnvironments')).body.environments).to.deep.equal([{ name: 'master' }]);
    expect((await manager.call('searchEvent', { query: { eventId: 'evt_contract' } })).body.deliveries).to.deep.equal([]);
    expect((await manager.call('searchEvent', {})).body.error).to.equal('VALIDATION_ERROR');
    expect((await manager.call('testWebhook', { params: { id } })).body.delivery.status).to.equal('pending');
    expect((await manager.call('deleteWebhook', { params: { id } })).status).to.equal(204);
    for (const op of ['getWebhook', 'updateWebhook', 'deleteWebhook', 'replayWebhook', 'listDeliveries', 'getDeliveryMinutes', 'getWebhookHealth', 'testWebhook']) {
      const res = await manager.call(op, { params: { id }, ...(op === 'updateWebhook' ? { body: { active: true } } : {}) });
      expect(res.body.error, op).to.equal('WEBHOOK_NOT_FOUND');
    }
  });

  it('users: search, create, get, update, log out, events, delete; userMetadata', async () => {
    const email = uniqueEmail('admin');
    const created = await manager.call('createUser', { body: { email, password: PASSWORD, emailVerified: true, appMetadata: { plan: 'pro' } } });
    expect(created.status).to.equal(201);
    const id = created.body.user.id as string;
    expect((await manager.call('createUser', { body: { email, password: PASSWORD } })).body.error).to.equal('AUTH_EMAIL_EXISTS');
    expect((await manager.call('listUsers', { query: { query: email, status: 'active' } })).body.users).to.have.length(1);
    expect((await manager.call('listUsers', { query: { status: 'gone' } })).body.error).to.equal('VALIDATION_ERROR');
    const login = await user.call('login', { body: { email, password: PASSWORD } });
    expect((await user.call('updateMe', { ...bearer(login.body.accessToken), body: { userMetadata: { theme: 'dark' } } })).status).to.equal(200);
    expect((await manager.call('getUser', { params: { id } })).body.sessions).to.have.length(1);
    expect((await manager.call('updateUser', { params: { id }, body: { disabled: true } })).body.user.status).to.equal('disabled');
    expect((await user.call('login', { body: { email, password: PASSWORD } })).body.error).to.equal('AUTH_USER_DISABLED');
    expect((await manager.call('logoutUser', { params: { id } })).body).to.deep.equal({ sessionsEnded: 0 });
    expect((await manager.call('listUserEvents', { params: { id } })).body.events.length).to.be.greaterThan(2);
    expect((await manager.call('listAuthEvents', { query: { type: 'user.created' } })).body.events).to.have.length(1);
    expect((await manager.call('deleteUser', { params: { id } })).status).to.equal(204);
    for (const op of ['getUser', 'updateUser', 'deleteUser', 'logoutUser']) {
      const res = await manager.call(op, { params: { id }, ...(op === 'updateUser' ? { body: { disabled: false } } : {}) });
      expect(res.body.error, op).to.equal('USER_NOT_FOUND');
    }
  });

  it('organizations: create, list, get, rename, invite, accept, switch, roles, remove, revoke, delete; the operator API', async () => {
    const plain = new HttpClient(t.url, { 'x-project-id': 'shop' });
    const ada = await signUpAndConfirm(t, plain, uniqueEmail('org.ada'));
    const bob = await signUpAndConfirm(t, plain, uniqueEmail('org.bob'));
    const created = await user.call('createOrganization', { ...bearer(ada.accessToken), body: { name: 'Acme' } });
    expect(created.status).to.equal(201);
    const id = created.body.organization.id as string;
    expect((await user.call('listOrganizations', bearer(ada.accessToken))).body.organizations).to.have.length(1);
    expect((await user.call('renameOrganization', { ...bearer(ada.accessToken), params: { id }, body: { name: 'Acme Corp' } })).status).to.equal(200);
    const before = t.smtp.to(bob.email).length;
    const invited = await user.call('inviteMember', { ...bearer(ada.accessToken), params: { id }, body: { email: bob.email, role: 'member' } });
    expect(invited.status).to.equal(201);
    const token = invitationTokenIn(await t.smtp.waitFor(bob.email, { after: before }));
    expect((await user.call('acceptInvitation', { ...bearer(ada.accessToken), body: { token } })).body.error).to.equal('INVITATION_INVALID');
    expect((await user.call('acceptInvitation', { ...bearer(bob.accessToken), body: { token } })).status).to.equal(200);
    expect((await user.call('getOrganization', { ...bearer(ada.accessToken), params: { id } })).body.members).to.have.length(2);
    expect((await user.call('switchOrganization', { ...bearer(bob.accessToken), body: { organizationId: id } })).status).to.equal(200);
    const role = await user.call('changeMemberRole', { ...bearer(ada.accessToken), params: { id, userId: bob.userId }, body: { role: 'admin' } });
    expect(role.status).to.equal(200);
    expect((await user.call('removeMember', { ...bearer(ada.accessToken), params: { id, userId: ada.userId } })).body.error).to.equal('ORGANIZATION_LAST_OWNER');
    expect((await user.call('removeMember', { ...bearer(ada.accessToken), params: { id, userId: bob.userId } })).status).to.equal(204);
    const again = await user.call('inviteMember', { ...bearer(ada.accessToken), params: { id }, body: { email: bob.email, role: 'admin' } });
    const invitationId = again.body.invitation.id as string;
    expect((await user.call('revokeInvitation', { ...bearer(ada.accessToken), params: { id, invitationId } })).status).to.equal(200);
    expect((await user.call('deleteOrganization', { ...bearer(ada.accessToken), params: { id } })).status).to.equal(204);

    const made = await manager.call('adminCreateOrganization', { body: { name: 'Globex', ownerId: ada.userId } });
    expect(made.status).to.equal(201);
    const org = made.body.organization.id as string;
    expect((await manager.call('adminListOrganizations')).body.organizations.length).to.be.greaterThan(0);
    expect((await manager.call('adminRenameOrganization', { params: { id: org }, body: { name: 'Globex Corp' } })).status).to.equal(200);
    expect((await manager.call('adminAddMember', { params: { id: org }, body: { userId: bob.userId, role: 'member' } })).status).to.equal(201);
    expect((await manager.call('adminChangeMemberRole', { params: { id: org, userId: bob.userId }, body: { role: 'admin' } })).status).to.equal(200);
    expect((await manager.call('adminRemoveMember', { params: { id: org, userId: bob.userId } })).status).to.equal(204);
    const sent = await manager.call('adminInviteMember', { params: { id: org }, body: { email: uniqueEmail('org.carl'), role: 'member' } });
    expect(sent.status).to.equal(201);
    expect((await manager.call('adminRevokeInvitation', { params: { id: org, invitationId: sent.body.invitation.id } })).status).to.equal(200);
    expect((await manager.call('adminGetOrganization', { params: { id: org } })).body.members).to.have.length(1);
    expect((await manager.call('adminDeleteOrganization', { params: { id: org } })).status).to.equal(204);
  });

  it('provider sign-in, identities, and the issuer document', async () => {
    const anonymous = new ContractClient(doc, new HttpClient(t.url));
    expect((await anonymous.call('openidConfiguration', { params: { projectId: 'shop', environment: 'master' } })).body.issuer).to.equal(
      `${t.config.publicUrl}/auth/issuers/shop/master`,
    );
    expect((await anonymous.call('openidConfiguration', { params: { projectId: 'nobody', environment: 'master' } })).body.error).to.equal('AUTH_NOT_CONFIGURED');
    // An OAuth 2.0 provider needs no discovery; its token endpoint (on loopback, which the address rule refuses) is never reached.
    const provider = {
      id: 'gh',
      kind: 'oauth2',
      clientId: 'client',
      clientSecret: 'secret',
      authorizationUrl: 'https://github.example/login/oauth/authorize',
      tokenUrl: 'https://127.0.0.1/token',
      userinfoUrl: 'https://github.example/user',
      allowedRedirectUrls: ['https://shop.example/done'],
    };
    expect((await manager.call('updateEnvironment', { body: { providers: [provider] } })).body.providers[0].clientSecretSet).to.equal(true);
    const verifier = 'a-pkce-verifier-of-the-contract-test-0123456789';
    const challenge = createHash('sha256').update(verifier).digest('base64url');
    const query = { projectId: 'shop', redirect_to: 'https://shop.example/done', code_challenge: challenge };
    const started = await anonymous.call('providerAuthorize', { params: { id: 'gh' }, query, redirect: 'manual' });
    expect(started.status).to.equal(302);
    const state = new URL(started.headers.get('location')!).searchParams.get('state')!;
    expect((await anonymous.call('providerAuthorize', { params: { id: 'gh' }, query: { ...query, redirect_to: 'https://shop.example/done/' }, redirect: 'manual' })).body.error).to.equal('AUTH_REDIRECT_NOT_ALLOWED');
    expect((await anonymous.call('providerAuthorize', { params: { id: 'nope' }, query, redirect: 'manual' })).body.error).to.equal('AUTH_PROVIDER_NOT_FOUND');
    expect((await anonymous.call('providerAuthorize', { params: { id: 'gh' }, query: { ...query, projectId: 'nobody' }, redirect: 'manual' })).body.error).to.equal('AUTH_NOT_CONFIGURED');
    expect((await anonymous.call('providerAuthorize', { params: { id: 'gh' }, redirect: 'manual' })).body.error).to.equal('VALIDATION_ERROR');
    const back = await anonymous.call('providerCallback', { params: { id: 'gh' }, query: { code: 'c', state }, redirect: 'manual' });
    expect(new URL(back.headers.get('location')!).searchParams.get('error')).to.equal('AUTH_PROVIDER_UNAVAILABLE');
    expect((await anonymous.call('providerCallback', { params: { id: 'gh' }, query: { code: 'c', state }, redirect: 'manual' })).body.error).to.equal('AUTH_PROVIDER_STATE_INVALID');

    // A grant as the callback leaves it (the provider itself is the subject of test/auth/providers/).
    const email = uniqueEmail('provider');
    const created = await manager.call('createUser', { body: { email, password: PASSWORD, emailVerified: true } });
    const userId = created.body.user.id as string;
    await t.ctx.pool.query(
      `INSERT INTO walgate.provider_grants (code_hash, user_id, project_id, environment, provider, code_challenge, created_at, expires_at)
       VALUES ($4, $1, 'shop', 'master', 'gh', $2, $3, $3::timestamptz + interval '1 minute')`,
      [userId, challenge, t.clock.now(), createHash('sha256').update('contract-code').digest()],
    );
    const pair = await user.call('providerToken', { body: { code: 'contract-code', codeVerifier: verifier } });
    expect(pair.status, JSON.stringify(pair.body)).to.equal(200);
    expect((await user.call('providerToken', { body: { code: 'contract-code', codeVerifier: verifier } })).body.error).to.equal('AUTH_INVALID_CODE');
    await t.ctx.pool.query(
      `INSERT INTO walgate.identities (user_id, project_id, environment, provider, subject, created_at, last_sign_in_at) VALUES ($1, 'shop', 'master', 'gh', '42', now(), now())`,
      [userId],
    );
    const listed = await user.call('identities', bearer(pair.body.accessToken));
    expect(listed.body.identities).to.have.length(1);
    expect((await user.call('unlinkIdentity', { params: { id: listed.body.identities[0].id }, ...bearer(pair.body.accessToken) })).status).to.equal(204);
    expect((await user.call('unlinkIdentity', { params: { id: listed.body.identities[0].id }, ...bearer(pair.body.accessToken) })).body.error).to.equal('IDENTITY_NOT_FOUND');
    mergeSeen(anonymous);
  });

  it('second factors: TOTP, the login step, challenge, recovery codes, passkeys, removal by the user and by an operator', async () => {
    const email = uniqueEmail('mfa');
    await user.call('signup', { body: { email, password: PASSWORD } });
    const confirmed = await user.call('confirmSignup', { body: { email, code: await mailedCode(email, 0) } });
    const weak = confirmed.body.accessToken as string;
    const enrol = await user.call('totpEnroll', { ...bearer(weak), body: { name: 'phone' } });
    expect(enrol.status).to.equal(200);
    const { factorId, secret } = enrol.body;
    expect((await user.call('totpVerify', { ...bearer(weak), body: { factorId, code: 'abcdef' } })).body.error).to.equal('AUTH_INVALID_CODE');
    expect((await user.call('totpVerify', { ...bearer(weak), body: { factorId, code: totp(secret, t.clock.now()) } })).status).to.equal(200);
    expect((await user.call('listFactors', bearer(weak))).body.factors).to.have.length(1);
    expect((await user.call('deleteFactor', { ...bearer(weak), params: { id: factorId } })).body.error).to.equal('AUTH_MFA_REQUIRED');

    t.clock.advanceSeconds(30);
    const step = await user.call('login', { body: { email, password: PASSWORD } });
    expect(step.body.mfaRequired).to.equal(true);
    const pair = await user.call('mfaChallenge', { body: { mfaToken: step.body.mfaToken, factorId, code: totp(secret, t.clock.now()) } });
    expect(pair.status).to.equal(200);
    expect((await user.call('mfaChallenge', { body: { mfaToken: step.body.mfaToken, code: 'abcde-fghij' } })).body.error).to.equal('AUTH_TOKEN_INVALID');
    const strong = pair.body.accessToken as string;
    expect((await user.call('regenerateRecoveryCodes', bearer(strong))).body.recoveryCodes).to.have.length(10);

    const passkey = new SoftwarePasskey('walgate.test', 'http://walgate.test');
    const options = await user.call('passkeyRegisterOptions', bearer(strong));
    expect(options.status).to.equal(200);
    const registered = await user.call('passkeyRegisterVerify', { ...bearer(strong), body: { response: passkey.create(options.body) } });
    expect(registered.status).to.equal(200);
    const loginOptions = await user.call('passkeyLoginOptions', {});
    expect(loginOptions.status).to.equal(200);
    expect((await user.call('passkeyLoginVerify', { body: { response: passkey.get(loginOptions.body) } })).status).to.equal(200);
    expect((await user.call('passkeyLoginVerify', { body: { response: passkey.get(loginOptions.body) } })).body.error).to.equal('AUTH_INVALID_CODE');

    expect((await user.call('deleteFactor', { ...bearer(strong), params: { id: factorId } })).status).to.equal(200);
    expect((await user.call('deleteFactor', { ...bearer(strong), params: { id: factorId } })).body.error).to.equal('MFA_FACTOR_NOT_FOUND');
    const userId = confirmed.body.user.id as string;
    expect((await manager.call('getUser', { params: { id: userId } })).body.factors).to.have.length(1);
    const passkeyFactor = registered.body.factor.id as string;
    expect((await manager.call('removeUserFactor', { params: { id: userId, factorId: passkeyFactor } })).status).to.equal(204);
    expect((await manager.call('removeUserFactor', { params: { id: userId, factorId: passkeyFactor } })).body.error).to.equal('MFA_FACTOR_NOT_FOUND');
  });

  it('passwordless: code and link, asked for and used; impersonation by an operator', async () => {
    const email = uniqueEmail('pwl');
    await user.call('signup', { body: { email, password: PASSWORD } });
    await user.call('confirmSignup', { body: { email, code: await mailedCode(email, 0) } });
    expect((await user.call('otp', { body: { email } })).body.error).to.equal('AUTH_PASSWORDLESS_DISABLED');
    const welcome = 'https://shop.example.com/welcome';
    expect((await manager.call('updateEnvironment', { body: { passwordless: { enabled: true, redirectUrls: [welcome] } } })).status).to.equal(200);
    expect((await user.call('otp', { body: { email } })).status).to.equal(200);
    const code = await mailedCode(email, 1);
    expect((await user.call('otpVerify', { body: { email, code: code === '000000' ? '111111' : '000000' } })).body.error).to.equal('AUTH_INVALID_CODE');
    const signedIn = await user.call('otpVerify', { body: { email, code } });
    expect(signedIn.status).to.equal(200);
    expect((await user.call('magicLink', { body: { email, redirectTo: 'https://evil.example.com/' } })).body.error).to.equal('AUTH_REDIRECT_NOT_ALLOWED');
    expect((await user.call('magicLink', { body: { email, redirectTo: welcome } })).status).to.equal(200);
    const link = new URL(/https:\/\/shop\.example\.com\/welcome\?\S+/.exec((await t.smtp.waitFor(email, { after: 2 })).text)![0]);
    expect((await user.call('magicLinkVerify', { body: { token: link.searchParams.get('token') } })).status).to.equal(200);
    expect((await user.call('magicLinkVerify', { body: { token: link.searchParams.get('token') } })).body.error).to.equal('AUTH_INVALID_CODE');

    const id = claimsOf(signedIn.body.accessToken).sub as string;
    const impersonated = await manager.call('impersonateUser', { params: { id }, body: { durationSeconds: 300 } });
    expect(impersonated.status).to.equal(201);
    expect((await user.call('totpEnroll', { ...bearer(impersonated.body.accessToken), body: {} })).body.error).to.equal('AUTH_IMPERSONATION_FORBIDDEN');
    expect((await manager.call('impersonateUser', { params: { id }, body: { durationSeconds: 1 } })).body.error).to.equal('VALIDATION_ERROR');
    const sessions = await user.call('sessions', bearer(signedIn.body.accessToken));
    expect(sessions.body.sessions.filter((x: { impersonated: boolean }) => x.impersonated)).to.have.length(1);
  });

  it('capture gaps: list, acknowledge', async () => {
    await t.ctx.pool.query(
      `INSERT INTO walgate.capture_gaps (id, project_id, environment, slot_name, reason, from_lsn, to_lsn, from_time, to_time, webhook_ids)
       VALUES ('gap_contract', 'shop', 'master', 'walgate_x', 'slot_lost', '0/10', '0/20', now(), now(), '{wh_x}')`,
    );
    expect((await manager.call('listGaps', { query: { open: 'true' } })).body.gaps).to.have.length(1);
    expect((await manager.call('listGaps', { query: { open: 'maybe' } })).body.error).to.equal('VALIDATION_ERROR');
    expect((await manager.call('acknowledgeGap', { params: { id: 'gap_contract' } })).body.gap.acknowledgedAt).to.be.a('string');
    expect((await manager.call('acknowledgeGap', { params: { id: 'gap_nope' } })).body.error).to.equal('GAP_NOT_FOUND');
    expect((await manager.call('listGaps')).body.gaps).to.have.length(1);
  });

  it('backfills: create, list, get, cancel, 409 while one runs; a gap’s backfill', async () => {
    const created = await manager.call('createWebhook', {
      body: { projectId: 'shop', environment: 'master', table: 'orders', events: ['INSERT'], url: HOOK_URL, secret: SECRET },
    });
    const id = created.body.webhook.id as string;
    const started = await manager.call('createBackfill', { params: { id }, body: { sortColumn: 'status', since: 'a' } });
    expect(started.status).to.equal(202);
    const backfillId = started.body.backfill.id as string;
    expect((await manager.call('createBackfill', { params: { id } })).body.error).to.equal('BACKFILL_RUNNING');
    expect((await manager.call('createBackfill', { params: { id }, body: { sortColumn: 'nope' } })).body.error).to.equal('VALIDATION_ERROR');
    expect((await manager.call('listBackfills', { params: { id } })).body.backfills).to.have.length(1);
    expect((await manager.call('getBackfill', { params: { id, backfillId } })).body.backfill.state).to.equal('running');
    expect((await manager.call('getBackfill', { params: { id, backfillId: 'bf_nope' } })).body.error).to.equal('BACKFILL_NOT_FOUND');
    expect((await manager.call('cancelBackfill', { params: { id, backfillId } })).body.backfill.state).to.equal('cancelled');
    expect((await manager.call('cancelBackfill', { params: { id, backfillId: 'bf_nope' } })).body.error).to.equal('BACKFILL_NOT_FOUND');
    await t.ctx.pool.query(
      `INSERT INTO walgate.capture_gaps (id, project_id, environment, slot_name, reason, from_lsn, to_lsn, from_time, to_time, webhook_ids)
       VALUES ('gap_backfill', 'shop', 'master', 'walgate_x', 'slot_lost', '0/10', '0/20', now(), now(), $1)`,
      [[id, 'wh_deleted_since']],
    );
    const repair = await manager.call('backfillGap', { params: { id: 'gap_backfill' } });
    expect(repair.body.backfills.map((b: { webhookId: string; gapId: string }) => [b.webhookId, b.gapId])).to.deep.equal([[id, 'gap_backfill']]);
    expect((await manager.call('backfillGap', { params: { id: 'gap_nope' } })).body.error).to.equal('GAP_NOT_FOUND');
    expect((await manager.call('deleteWebhook', { params: { id } })).status).to.equal(204);
  });

  it('destinations: create, list, get, update, 409 while a subscription delivers to one, delete', async () => {
    const base = { projectId: 'shop', environment: 'master', name: 'contract-bus', kind: 'nats', url: 'nats://93.184.216.34:4222' };
    const created = await manager.call('createDestination', { body: { ...base, token: 'contract-token-1' } });
    expect(created.status).to.equal(201);
    const id = created.body.destination.id as string;
    expect((await manager.call('createDestination', { body: { ...base, kind: 'kafka' } })).body.error).to.equal('VALIDATION_ERROR');
    expect((await manager.call('listDestinations')).body.destinations).to.have.length(1);
    expect((await manager.call('getDestination', { params: { id } })).body.subscriptions).to.deep.equal([]);
    expect((await manager.call('getDestination', { params: { id: 'dst_nope' } })).body.error).to.equal('DESTINATION_NOT_FOUND');
    expect((await manager.call('updateDestination', { params: { id }, body: { token: null } })).body.destination.credentials.token).to.equal(false);
    expect((await manager.call('updateDestination', { params: { id: 'dst_nope' }, body: { token: null } })).body.error).to.equal('DESTINATION_NOT_FOUND');
    const hook = await manager.call('createWebhook', {
      body: { projectId: 'shop', environment: 'master', table: 'orders', events: ['INSERT'], destination: { name: 'contract-bus', subject: 'shop.{table}.{event}' }, secret: SECRET },
    });
    expect(hook.status).to.equal(201);
    const inUse = await manager.call('deleteDestination', { params: { id } });
    expect(inUse.body).to.include({ error: 'DESTINATION_IN_USE' });
    expect(inUse.body.subscriptions).to.deep.equal([hook.body.webhook.id]);
    expect((await manager.call('deleteWebhook', { params: { id: hook.body.webhook.id } })).status).to.equal(204);
    expect((await manager.call('deleteDestination', { params: { id } })).status).to.equal(204);
    expect((await manager.call('deleteDestination', { params: { id } })).body.error).to.equal('DESTINATION_NOT_FOUND');
  });

  describe('the failures every operation of a kind shares', () => {
    const params = {
      id: 'wh_nonexistent',
      deliveryId: 'del_nonexistent',
      replayId: 'rpl_nonexistent',
      factorId: '00000000-0000-4000-8000-000000000000',
      backfillId: 'bf_nonexistent',
      userId: '00000000-0000-4000-8000-000000000000',
      invitationId: '00000000-0000-4000-8000-000000000000',
    };
    const bodyless = (id: string) => !documentedOperations(doc).find((o) => o.id === id)!.operation.requestBody;
    const all = () => documentedOperations(doc).map((o) => o.id);
    // Operations that name their project with the headers (browser navigations and the issuer documents carry it in the URL).
    const auth = () =>
      documentedOperations(doc)
        .filter((o) => o.path.startsWith('/auth/') && (o.operation.parameters ?? []).some((p: { in: string; name: string }) => p.in === 'header' && p.name === 'x-project-id'))
        .map((o) => o.id);
    const management = () => documentedOperations(doc).filter((o) => /^\/api\/rest\/_(webhooks|users|auth-events|organizations|destinations)/.test(o.path)).map((o) => o.id);
    const isManagement = (id: string) => management().includes(id);

    it('auth: no project header → 400, an unknown project → 404', async () => {
      const sessionParams = { id: '00000000-0000-4000-8000-000000000000', userId: '00000000-0000-4000-8000-000000000000', invitationId: '00000000-0000-4000-8000-000000000000' };
      for (const id of auth()) {
        const anonymous = new ContractClient(doc, new HttpClient(t.url));
        expect((await anonymous.call(id, { params: sessionParams, body: bodyless(id) ? undefined : {} })).body.error, id).to.equal('VALIDATION_ERROR');
        const unknown = new ContractClient(doc, new HttpClient(t.url, { 'x-project-id': 'nobody' }));
        expect((await unknown.call(id, { params: sessionParams, body: bodyless(id) ? undefined : {} })).body.error, id).to.equal('AUTH_NOT_CONFIGURED');
        mergeSeen(anonymous, unknown);
      }
    });

    it('management: no token → 401, another project’s token → 403, no environment → 400', async () => {
      for (const id of management()) {
        const call = (headers: Record<string, string>) => new ContractClient(doc, new HttpClient(t.url, headers)).call(id, { params, body: bodyless(id) ? undefined : {} });
        expect((await call({ 'x-project-id': 'shop', environment: 'master' })).body.error, id).to.equal('AUTH_TOKEN_INVALID');
        expect((await call({ authorization: `Bearer ${otherToken}`, 'x-project-id': 'shop', environment: 'master' })).body.error, id).to.equal('FORBIDDEN');
      }
      const token = await t.managementToken('shop');
      for (const id of management()) {
        const noEnvironment = new ContractClient(doc, new HttpClient(t.url, { authorization: `Bearer ${token}`, 'x-project-id': 'shop' }));
        expect((await noEnvironment.call(id, { params, body: bodyless(id) ? undefined : {} })).body.error, id).to.equal('VALIDATION_ERROR');
      }
    });

    it('JSON bodies: not JSON → 415, malformed → 400, over 100 KB → 413', async () => {
      for (const id of all().filter((i) => !bodyless(i))) {
        const client = isManagement(id) ? manager : user;
        const text = await client.call(id, { params, raw: 'hello', headers: { 'content-type': 'text/plain' } });
        expect(text.body.error, id).to.equal('UNSUPPORTED_MEDIA_TYPE');
        const malformed = await client.call(id, { params, raw: '{"email":', headers: { 'content-type': 'application/json' } });
        expect(malformed.body.error, id).to.equal('VALIDATION_ERROR');
        const large = await client.call(id, { params, raw: JSON.stringify({ pad: 'x'.repeat(101 * 1024) }), headers: { 'content-type': 'application/json' } });
        expect(large.body.error, id).to.equal('PAYLOAD_TOO_LARGE');
      }
    });

    it('a body without its required fields names each of them, as the documented schema requires them', async () => {
      for (const o of documentedOperations(doc).filter((op) => op.operation.requestBody)) {
        const required: string[] = o.operation.requestBody.content['application/json'].schema.required ?? [];
        if (!required.length) continue;
        const client = isManagement(o.id) ? manager : user;
        const res = await client.call(o.id, { params, body: {} });
        expect(res.body.error, o.id).to.equal('VALIDATION_ERROR');
        expect(res.body.violations.map((v: { path: string }) => v.path), o.id).to.have.members(required);
      }
    });
  });

  it('every documented operation was seen succeeding', () => {
    mergeSeen(user, manager);
    for (const o of documentedOperations(doc)) {
      const success = Object.keys(o.operation.responses).find((s) => Number(s) < 400)!; // 2xx, or a redirect's 302
      expect([...(seenAll.get(o.id) ?? [])], `${o.id} never answered ${success}`).to.include(Number(success));
    }
  });

  const seenAll = new Map<string, Set<number>>();
  function mergeSeen(...clients: ContractClient[]): void {
    for (const c of clients) for (const [id, statuses] of c.seen) seenAll.set(id, new Set([...(seenAll.get(id) ?? []), ...statuses]));
  }
});
