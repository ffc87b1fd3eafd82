import { expect } from 'chai';
import { createRemoteJWKSet, decodeJwt, jwtVerify, SignJWT } from 'jose';
import * as client from 'openid-client';
import { KeyRing } from '../../../src/auth/keyring.js';
import { findEnvironment } from '../../../src/projects/environments.js';
import type { TestApi } from '../../support/api.js';
import { bearer, signUpAndConfirm } from '../support.js';
import { startProviderApi } from './support.js';

// walgate as an issuer for resource servers: a resource server that has nothing but a token reads
// its `iss`, discovers the issuer's metadata with a standard OpenID library (openid-client), and
// verifies the token with jose against the discovered `jwks_uri`. Each environment is an issuer
// of its own; tokens issued before (iss = PUBLIC_URL) keep working until they expire.

describe('auth issuer: per-environment discovery documents a resource server verifies tokens with', function () {
  this.timeout(120_000);
  let t: TestApi;

  before(async () => {
    t = await startProviderApi();
  });
  after(() => t.close());

  /** Everything a resource server does, given only a token and the audience it expects. */
  async function verifyByDiscovery(token: string, audience: string) {
    const { iss } = decodeJwt(token);
    // http: only because the test api is; a real deployment's PUBLIC_URL is https.
    const config = await client.discovery(new URL(iss!), 'resource-server', undefined, undefined, {
      execute: [client.allowInsecureRequests],
    });
    const meta = config.serverMetadata();
    const keys = createRemoteJWKSet(new URL(meta.jwks_uri!));
    return jwtVerify(token, keys, { issuer: meta.issuer, audience, algorithms: meta.id_token_signing_alg_values_supported });
  }

  it('verifies an access token of each environment through its own issuer, and not through another', async () => {
    const { http: master } = await t.provision({ projectId: 'shop', name: 'master' });
    const { http: staging } = await t.provision({ projectId: 'shop', name: 'staging', signingAlg: 'RS256' });
    const a = await signUpAndConfirm(t, master);
    const b = await signUpAndConfirm(t, staging);
    expect(decodeJwt(a.accessToken).iss).to.equal(`${t.url}/auth/issuers/shop/master`);
    expect(decodeJwt(b.accessToken).iss).to.equal(`${t.url}/auth/issuers/shop/staging`);

    const verified = await verifyByDiscovery(a.accessToken, 'shop');
    expect(verified.payload).to.include({ sub: a.userId, email: a.email, env: 'master' });
    expect(verified.protectedHeader.alg).to.equal('ES256');
    expect((await verifyByDiscovery(b.accessToken, 'shop')).payload.sub).to.equal(b.userId);

    const doc = await t.http.get('/auth/issuers/shop/master/.well-known/openid-configuration');
    expect(doc.status).to.equal(200);
    expect(doc.headers.get('cache-control')).to.equal('public, max-age=300');
    expect(doc.body.issuer).to.equal(`${t.url}/auth/issuers/shop/master`);
    expect(doc.body.jwks_uri).to.equal(`${t.url}/auth/.well-known/jwks.json?projectId=shop&environment=master`);
    expect(doc.body.id_token_signing_alg_values_supported[0]).to.equal('ES256');

    // A staging token presented as if master's: master's issuer and keys do not verify it.
    const masterMeta = (
      await client.discovery(new URL(doc.body.issuer), 'rs', undefined, undefined, { execute: [client.allowInsecureRequests] })
    ).serverMetadata();
    let refused: unknown;
    try {
      await jwtVerify(b.accessToken, createRemoteJWKSet(new URL(masterMeta.jwks_uri!)), { issuer: masterMeta.issuer, audience: 'shop' });
    } catch (err) {
      refused = err;
    }
    expect(refused, 'a token of another environment must not verify').to.be.instanceOf(Error);
  });

  it('keeps accepting tokens issued before (iss = PUBLIC_URL) until they expire', async () => {
    const { http } = await t.provision({ projectId: 'legacy', name: 'master' });
    const account = await signUpAndConfirm(t, http);
    const env = (await findEnvironment(t.ctx.pool, 'legacy', 'master'))!;
    const { kid, alg, key } = await new KeyRing(t.ctx).signingKey(env);
    const claims = { ...decodeJwt(account.accessToken), iss: t.url };
    const old = await new SignJWT(claims).setProtectedHeader({ alg, kid, typ: 'JWT' }).sign(key);
    expect((await http.get('/auth/me', bearer(old))).status).to.equal(200);
    const elsewhere = await new SignJWT({ ...claims, iss: `${t.url}/auth/issuers/legacy/other` })
      .setProtectedHeader({ alg, kid, typ: 'JWT' })
      .sign(key);
    expect((await http.get('/auth/me', bearer(elsewhere))).status).to.equal(401);
  });

  it('answers 404 AUTH_NOT_CONFIGURED for an unknown environment, or one with auth off', async () => {
    const res = await t.http.get('/auth/issuers/nobody/master/.well-known/openid-configuration');
    expect(res.status).to.equal(404);
    expect(res.body.error).to.equal('AUTH_NOT_CONFIGURED');
  });
});
