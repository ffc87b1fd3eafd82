import { expect } from 'chai';
import { decodeJwt } from 'jose';
import type { TestApi } from '../../support/api.js';
import { HttpClient } from '../../support/http.js';
import { bearer, signUpAndConfirm, uniqueEmail, PASSWORD } from '../support.js';
import { enrolTotp, totp } from '../mfa/support.js';
import { FakeOidcProvider } from './fake-oidc.js';
import { authorizePath, pkce, setProviders, startProviderApi, step, walkSignIn } from './support.js';

// Provider sign-in against a hand-made OpenID provider that can misbehave on purpose: the happy
// path, then every refusal with its own error, the linking rules, identities, and the settings
// that hold the client secret.

const APP = 'http://app.test/landing';
const PROJECT = 'acme';

describe('auth providers: OpenID Connect sign-in, refusals, linking and identities', function () {
  this.timeout(120_000);
  let t: TestApi;
  let http: HttpClient;
  let idp: FakeOidcProvider;

  before(async () => {
    t = await startProviderApi();
    ({ http } = await t.provision({ projectId: PROJECT, name: 'master' }));
    idp = new FakeOidcProvider();
    await idp.start();
    await setProviders(t, PROJECT, [
      {
        id: 'fake',
        kind: 'oidc',
        issuer: idp.url,
        clientId: idp.clientId,
        clientSecret: idp.clientSecret,
        allowedRedirectUrls: [APP, 'https://app.example.com/cb?tab=1'],
      },
    ]);
  });
  after(async () => {
    await t.close();
    await idp.stop();
  });
  beforeEach(() => {
    idp.fault = {};
    idp.person = { sub: `sub-${Math.random().toString(36).slice(2)}`, email: uniqueEmail('idp'), email_verified: true };
  });

  const signIn = async (redirectTo = APP) => {
    const { verifier, challenge } = pkce();
    const walk = await walkSignIn(t, 'fake', { projectId: PROJECT, redirectTo, challenge });
    return { ...walk, verifier };
  };
  const exchange = (code: string | null, codeVerifier: string) => http.post('/auth/providers/token', { code, codeVerifier });
  const refusal = (landing: URL) => ({
    error: landing.searchParams.get('error'),
    description: landing.searchParams.get('error_description') ?? '',
  });

  it('signs in: code + PKCE + state + nonce at the provider, a one-time code at the application, a session with amr fed', async () => {
    const { landing, verifier } = await signIn();
    expect(landing.origin + landing.pathname).to.equal(APP);
    expect([...landing.searchParams.keys()]).to.deep.equal(['code']); // never a token in the URL
    const sent = idp.lastAuthorize!;
    expect(sent.get('code_challenge_method')).to.equal('S256');
    expect(sent.get('code_challenge')).to.match(/^[A-Za-z0-9_-]{43}$/);
    expect(sent.get('state')).to.have.length.greaterThan(30);
    expect(sent.get('nonce')).to.have.length.greaterThan(30);
    expect(sent.get('scope')).to.equal('openid email profile');
    expect(sent.get('redirect_uri')).to.equal(`${t.url}/auth/providers/fake/callback`);
    // The sealed secret was opened and sent (client_secret_basic).
    const basic = Buffer.from(idp.tokenRequests.at(-1)!.authorization!.replace(/^Basic /, ''), 'base64').toString();
    expect(basic.split(':').map(decodeURIComponent)).to.deep.equal([idp.clientId, idp.clientSecret]); // RFC 6749 §2.3.1 form-encodes both

    const pair = await exchange(landing.searchParams.get('code'), verifier);
    expect(pair.status, JSON.stringify(pair.body)).to.equal(200);
    expect(decodeJwt(pair.body.accessToken)).to.include({ aal: 'aal1' });
    expect(decodeJwt(pair.body.accessToken).amr).to.deep.equal(['fed']);
    const me = await http.get('/auth/me', bearer(pair.body.accessToken));
    expect(me.status).to.equal(200);
    expect(me.body.user).to.include({ email: idp.person.email, emailVerified: true });
    const ids = await http.get('/auth/identities', bearer(pair.body.accessToken));
    expect(ids.body.identities).to.have.length(1);
    expect(ids.body.identities[0]).to.include({ provider: 'fake', subject: idp.person.sub, email: idp.person.email });

    // The same person again: the same user, no second identity.
    const again = await signIn();
    const second = await exchange(again.landing.searchParams.get('code'), again.verifier);
    expect((await http.get('/auth/me', bearer(second.body.accessToken))).body.user.id).to.equal(me.body.user.id);
    expect((await http.get('/auth/identities', bearer(second.body.accessToken))).body.identities).to.have.length(1);
    const { rows } = await t.ctx.pool.query('SELECT type FROM walgate.auth_events WHERE user_id = $1 ORDER BY seq', [me.body.user.id]);
    expect(rows.map((r) => r.type)).to.deep.equal([
      'user.signed_up',
      'user.identity_linked',
      'user.provider_signed_in',
      'user.provider_signed_in',
    ]);
  });

  it('a user with a second factor gets the MFA step from the exchange, and a TOTP code finishes it: amr fed + otp, aal2', async () => {
    const first = await signIn();
    const pair = await exchange(first.landing.searchParams.get('code'), first.verifier);
    expect(pair.status, JSON.stringify(pair.body)).to.equal(200);
    const factor = await enrolTotp(t, http, { accessToken: pair.body.accessToken });
    t.clock.advanceSeconds(30); // the enrolment's code is spent: the next step's code
    const again = await signIn();
    const stepped = await exchange(again.landing.searchParams.get('code'), again.verifier);
    expect(stepped.status, JSON.stringify(stepped.body)).to.equal(200);
    expect(stepped.body).to.include({ mfaRequired: true });
    expect(stepped.body).to.not.have.property('accessToken');
    expect(stepped.body.factors).to.deep.equal([{ id: factor.factorId, type: 'totp' }]);
    const done = await http.post('/auth/mfa/challenge', {
      mfaToken: stepped.body.mfaToken,
      factorId: factor.factorId,
      code: totp(factor.secret, t.clock.now()),
    });
    expect(done.status, JSON.stringify(done.body)).to.equal(200);
    expect(decodeJwt(done.body.accessToken)).to.include({ aal: 'aal2' });
    expect(decodeJwt(done.body.accessToken).amr).to.deep.equal(['fed', 'otp']);
  });

  it('creates a user whose address is unverified when the provider does not vouch for it', async () => {
    idp.person = { sub: 'unvouched', email: uniqueEmail('unvouched'), email_verified: false };
    const { landing, verifier } = await signIn();
    const pair = await exchange(landing.searchParams.get('code'), verifier);
    expect((await http.get('/auth/me', bearer(pair.body.accessToken))).body.user).to.include({
      email: idp.person.email,
      emailVerified: false,
    });
  });

  it('keeps the query of an allowed redirect URL and adds the code to it', async () => {
    const { landing } = await signIn('https://app.example.com/cb?tab=1');
    expect(landing.searchParams.get('tab')).to.equal('1');
    expect(landing.searchParams.get('code')).to.be.a('string');
  });

  it('refuses a replayed code, and a wrong verifier (which uses the code up)', async () => {
    const { landing, verifier } = await signIn();
    const code = landing.searchParams.get('code');
    expect((await exchange(code, verifier)).status).to.equal(200);
    const replay = await exchange(code, verifier);
    expect(replay.status).to.equal(400);
    expect(replay.body.error).to.equal('AUTH_INVALID_CODE');

    const other = await signIn();
    const wrong = await exchange(other.landing.searchParams.get('code'), pkce().verifier);
    expect(wrong.body.error).to.equal('AUTH_INVALID_CODE');
    expect((await exchange(other.landing.searchParams.get('code'), other.verifier)).body.error).to.equal('AUTH_INVALID_CODE');

    // A code of this environment is nothing in another one.
    const { http: elsewhere } = await t.provision({ projectId: 'elsewhere', name: 'master' });
    const third = await signIn();
    const foreign = await elsewhere.post('/auth/providers/token', {
      code: third.landing.searchParams.get('code'),
      codeVerifier: third.verifier,
    });
    expect(foreign.body.error).to.equal('AUTH_INVALID_CODE');
  });

  it('refuses a missing, tampered or replayed state at the callback (400, nowhere to redirect to)', async () => {
    const { challenge } = pkce();
    const start = await step(t.url + authorizePath('fake', { projectId: PROJECT, redirectTo: APP, challenge }));
    const atProvider = await step(start.location!);
    const callback = new URL(atProvider.location!);

    const missing = new URL(callback);
    missing.searchParams.delete('state');
    const tampered = new URL(callback);
    tampered.searchParams.set('state', `${callback.searchParams.get('state')}x`);
    for (const url of [missing, tampered]) {
      const res = await step(url.href);
      expect(res.status, url.href).to.equal(400);
      expect(res.body.error).to.equal('AUTH_PROVIDER_STATE_INVALID');
      expect(res.location).to.equal(undefined);
    }
    // The genuine callback still works once, and only once.
    expect((await step(callback.href)).status).to.equal(302);
    const replay = await step(callback.href);
    expect(replay.status).to.equal(400);
    expect(replay.body.error).to.equal('AUTH_PROVIDER_STATE_INVALID');
  });

  const faults = [
    { name: 'a wrong nonce', fault: { nonce: 'not-the-nonce' }, reason: /\(nonce\)/ },
    { name: 'a wrong audience', fault: { aud: 'someone-else' }, reason: /\(aud\)/ },
    { name: 'an expired ID token', fault: { expiresIn: -600 }, reason: /\(exp\)/ },
    { name: 'a key not in the JWKS', fault: { foreignKey: true }, reason: /key|JWK/i },
  ];
  for (const { name, fault, reason } of faults) {
    it(`refuses an ID token with ${name}: back at the application with the error, no user`, async () => {
      idp.fault = fault;
      const { landing } = await signIn();
      expect(landing.origin + landing.pathname).to.equal(APP);
      expect(landing.searchParams.get('code')).to.equal(null);
      const { error, description } = refusal(landing);
      expect(error).to.equal('AUTH_PROVIDER_RESPONSE_INVALID');
      expect(description).to.match(reason);
      const { rows } = await t.ctx.pool.query('SELECT 1 FROM walgate.users WHERE email = $1', [idp.person.email]);
      expect(rows).to.have.length(0);
    });
  }

  it('refuses redirect_to that is not exactly an allowed URL (prefix, path, userinfo, query tricks)', async () => {
    const { challenge } = pkce();
    const tricks = [
      'http://app.test/landing/',
      'http://app.test/landing/../evil',
      'http://app.test/landingx',
      'http://app.test/landing?next=http://evil.example',
      'http://app.test/landing#x',
      'http://app.test.evil.example/landing',
      'http://app.test@evil.example/landing',
      'http://evil.example@app.test/landing',
      'http://evil.example/?http://app.test/landing',
      'HTTP://APP.TEST/landing',
      'https://app.example.com/cb',
      'javascript:alert(1)//http://app.test/landing',
      '',
    ];
    for (const redirectTo of tricks) {
      const res = await step(t.url + authorizePath('fake', { projectId: PROJECT, redirectTo, challenge }));
      expect(res.status, redirectTo).to.equal(400);
      expect(res.body.error, redirectTo).to.equal('AUTH_REDIRECT_NOT_ALLOWED');
      expect(res.location, redirectTo).to.equal(undefined);
    }
    const unknown = await step(t.url + authorizePath('nope', { projectId: PROJECT, redirectTo: APP, challenge }));
    expect(unknown.status).to.equal(404);
    expect(unknown.body.error).to.equal('AUTH_PROVIDER_NOT_FOUND');
    const badChallenge = await step(t.url + authorizePath('fake', { projectId: PROJECT, redirectTo: APP, challenge: 'short' }));
    expect(badChallenge.body.error).to.equal('VALIDATION_ERROR');
  });

  it('links to an existing account only when both sides verified the address; else AUTH_PROVIDER_LINK_UNVERIFIED', async () => {
    // Verified account, provider does not vouch for the address.
    const owner = await signUpAndConfirm(t, http);
    idp.person = { sub: 'mallory-1', email: owner.email, email_verified: false };
    let landing = (await signIn()).landing;
    expect(refusal(landing).error).to.equal('AUTH_PROVIDER_LINK_UNVERIFIED');
    expect(landing.searchParams.get('code')).to.equal(null);

    // Unverified account (signed up, never confirmed), provider vouches.
    const pending = uniqueEmail('pending');
    expect((await http.post('/auth/signup', { email: pending, password: PASSWORD })).status).to.equal(201);
    idp.person = { sub: 'mallory-2', email: pending, email_verified: true };
    landing = (await signIn()).landing;
    expect(refusal(landing).error).to.equal('AUTH_PROVIDER_LINK_UNVERIFIED');
    const { rows } = await t.ctx.pool.query('SELECT count(*)::int AS n FROM walgate.identities WHERE subject LIKE $1', ['mallory-%']);
    expect(rows[0].n).to.equal(0);

    // Both verified: linked to the very account, which keeps its password.
    idp.person = { sub: 'owner-at-idp', email: owner.email, email_verified: true };
    const linked = await signIn();
    const pair = await exchange(linked.landing.searchParams.get('code'), linked.verifier);
    expect((await http.get('/auth/me', bearer(pair.body.accessToken))).body.user.id).to.equal(owner.userId);
    expect((await http.post('/auth/login', { email: owner.email, password: PASSWORD })).status).to.equal(200);

    // The password account may drop its identity; a provider-only user may not drop its last one.
    const ids = (await http.get('/auth/identities', bearer(owner.accessToken))).body.identities;
    expect(ids).to.have.length(1);
    expect((await http.delete(`/auth/identities/${ids[0].id}`, bearer(owner.accessToken))).status).to.equal(204);
    expect((await http.get('/auth/identities', bearer(owner.accessToken))).body.identities).to.deep.equal([]);
    const { rows: events } = await t.ctx.pool.query(
      `SELECT type, details FROM walgate.auth_events WHERE user_id = $1 AND type LIKE 'user.identity_%' ORDER BY seq`,
      [owner.userId],
    );
    expect(events.map((e) => [e.type, e.details.provider])).to.deep.equal([
      ['user.identity_linked', 'fake'],
      ['user.identity_unlinked', 'fake'],
    ]);
  });

  it("never removes the last way to sign in; another user's identity is as unknown as none", async () => {
    const { landing, verifier } = await signIn();
    const pair = await exchange(landing.searchParams.get('code'), verifier);
    const ids = (await http.get('/auth/identities', bearer(pair.body.accessToken))).body.identities;
    const last = await http.delete(`/auth/identities/${ids[0].id}`, bearer(pair.body.accessToken));
    expect(last.status).to.equal(409);
    expect(last.body.error).to.equal('AUTH_LAST_SIGN_IN_METHOD');

    const stranger = await signUpAndConfirm(t, http);
    const theirs = await http.delete(`/auth/identities/${ids[0].id}`, bearer(stranger.accessToken));
    expect(theirs.status).to.equal(404);
    expect(theirs.body.error).to.equal('IDENTITY_NOT_FOUND');
    expect((await http.get('/auth/identities')).status).to.equal(401);
  });

  it('keeps the client secret sealed: never shown, not in the stored settings, kept when the list is sent without it', async () => {
    const token = await t.managementToken(PROJECT);
    const shown = await http.get('/api/rest/_environment', bearer(token));
    expect(shown.body.providers[0]).to.include({ id: 'fake', clientSecretSet: true });
    expect(shown.text).not.to.include(idp.clientSecret);
    expect(shown.text).not.to.include('clientSecretSealed');
    const { rows } = await t.ctx.pool.query('SELECT settings::text AS s FROM walgate.environments WHERE project_id = $1', [PROJECT]);
    expect(rows[0].s).not.to.include(idp.clientSecret);

    // Sent again without the secret (e.g. to add a redirect URL): the secret stays and still works.
    const { clientSecretSet: _, ...rest } = shown.body.providers[0];
    const changed = await http.patch(
      '/api/rest/_environment',
      { providers: [{ ...rest, allowedRedirectUrls: [...rest.allowedRedirectUrls, 'http://app.test/other'] }] },
      bearer(token),
    );
    expect(changed.status, JSON.stringify(changed.body)).to.equal(200);
    expect(changed.body.providers[0].clientSecretSet).to.equal(true);
    const { landing } = await signIn('http://app.test/other');
    expect(landing.searchParams.get('code')).to.be.a('string');

    const invalid = await http.patch(
      '/api/rest/_environment',
      { providers: [{ id: 'x', kind: 'oidc', clientId: 'c', allowedRedirectUrls: ['http://u:p@app.test/'] }] },
      bearer(token),
    );
    expect(invalid.status).to.equal(400);
    expect(invalid.body.violations.map((v: { path: string }) => v.path)).to.include.members([
      'providers.0.issuer',
      'providers.0.allowedRedirectUrls.0',
    ]);
  });
});

describe('auth providers: the GraphQL twins (providerToken, identities, unlinkIdentity)', function () {
  this.timeout(120_000);
  let t: TestApi;
  let http: HttpClient;
  let idp: FakeOidcProvider;

  before(async () => {
    t = await startProviderApi();
    ({ http } = await t.provision({ projectId: PROJECT, name: 'master' }));
    idp = new FakeOidcProvider();
    await idp.start();
    await setProviders(t, PROJECT, [
      { id: 'fake', kind: 'oidc', issuer: idp.url, clientId: idp.clientId, clientSecret: idp.clientSecret, allowedRedirectUrls: [APP] },
    ]);
  });
  after(async () => {
    await t.close();
    await idp.stop();
  });

  const gql = (query: string, variables: Record<string, unknown> = {}, token?: string) =>
    http.post('/graphql', { query, variables }, token ? bearer(token) : {});

  it('exchanges the code, lists the identity, and refuses to remove the last one, with the REST error codes', async () => {
    idp.person = { sub: 'gql-user', email: uniqueEmail('gql'), email_verified: true };
    const { verifier, challenge } = pkce();
    const { landing } = await walkSignIn(t, 'fake', { projectId: PROJECT, redirectTo: APP, challenge });
    const mutation = 'mutation ($input: ProviderTokenInput!) { providerToken(input: $input) { accessToken tokenType } }';
    const input = { code: landing.searchParams.get('code'), codeVerifier: verifier };
    const pair = await gql(mutation, { input });
    expect(pair.body.errors, JSON.stringify(pair.body)).to.equal(undefined);
    const token = pair.body.data.providerToken.accessToken;
    const replay = await gql(mutation, { input });
    expect(replay.body.errors[0].extensions.code).to.equal('AUTH_INVALID_CODE');

    const listed = await gql('{ identities { identities { id provider subject email } } }', {}, token);
    expect(listed.body.data.identities.identities).to.deep.equal([
      { id: listed.body.data.identities.identities[0].id, provider: 'fake', subject: 'gql-user', email: idp.person.email },
    ]);
    const unlink = await gql(
      'mutation ($input: UnlinkIdentityInput!) { unlinkIdentity(input: $input) { message } }',
      { input: { id: listed.body.data.identities.identities[0].id } },
      token,
    );
    expect(unlink.body.errors[0].extensions.code).to.equal('AUTH_LAST_SIGN_IN_METHOD');
  });
});
