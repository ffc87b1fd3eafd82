import { expect } from 'chai';
import type { TestApi } from '../../support/api.js';
import type { HttpClient } from '../../support/http.js';
import { SoftwarePasskey } from '../../support/passkey.js';
import { bearer, PASSWORD, signUpAndConfirm, startAuthApi } from '../support.js';
import { claimsOf, gql } from './support.js';

// The GraphQL twins of the passkey and factor operations (WebAuthn JSON as text), with a
// software passkey: registration, passwordless sign-in, the passkey as the second factor,
// removal with an aal2 token; malformed JSON text is a VALIDATION_ERROR.

describe('auth mfa: passkeys and factors over GraphQL', function () {
  this.timeout(60_000);
  let t: TestApi;
  let http: HttpClient;

  before(async () => {
    t = await startAuthApi();
    ({ http } = await t.provision({ projectId: 'gql-passkeys', name: 'master' }));
  });
  after(() => t.close());

  const REGISTER =
    'mutation ($i: PasskeyRegisterVerifyInput!) { passkeyRegisterVerify(input: $i) { factor { id type name } recoveryCodes } }';
  const OPTIONS = 'mutation ($i: PasskeyLoginOptionsInput) { passkeyLoginOptions(input: $i) { optionsJSON } }';
  const VERIFY = 'mutation ($i: PasskeyLoginVerifyInput!) { passkeyLoginVerify(input: $i) { accessToken } }';

  it('register, sign in without a password, finish a password login with it, remove it', async () => {
    const a = await signUpAndConfirm(t, http);
    const passkey = new SoftwarePasskey('walgate.test', 'http://walgate.test');
    const options = await gql(http, 'mutation { passkeyRegisterOptions { optionsJSON } }', {}, a.accessToken);
    const registered = await gql(
      http,
      REGISTER,
      { i: { response: JSON.stringify(passkey.create(JSON.parse(options.body.data.passkeyRegisterOptions.optionsJSON))), name: 'key' } },
      a.accessToken,
    );
    expect(registered.body.errors).to.equal(undefined);
    const factor = registered.body.data.passkeyRegisterVerify.factor;
    expect(factor).to.include({ type: 'webauthn', name: 'key' });
    expect(registered.body.data.passkeyRegisterVerify.recoveryCodes).to.have.length(10);

    const loginOptions = JSON.parse((await gql(http, OPTIONS)).body.data.passkeyLoginOptions.optionsJSON);
    const signedIn = await gql(http, VERIFY, { i: { response: JSON.stringify(passkey.get(loginOptions)) } });
    expect(claimsOf(signedIn.body.data.passkeyLoginVerify.accessToken)).to.deep.include({ amr: ['webauthn'], aal: 'aal2' });

    const login = await gql(http, 'mutation ($i: LoginInput!) { login(input: $i) { mfaRequired mfaToken } }', {
      i: { email: a.email, password: PASSWORD },
    });
    const { mfaToken } = login.body.data.login;
    const second = JSON.parse((await gql(http, OPTIONS, { i: { mfaToken } })).body.data.passkeyLoginOptions.optionsJSON);
    expect(second.allowCredentials.map((c: { id: string }) => c.id)).to.deep.equal([passkey.id]);
    const pair = await gql(http, VERIFY, { i: { response: JSON.stringify(passkey.get(second)), mfaToken } });
    const strong = pair.body.data.passkeyLoginVerify.accessToken as string;
    expect(claimsOf(strong)).to.deep.include({ amr: ['pwd', 'webauthn'], aal: 'aal2' });

    const malformed = await gql(http, VERIFY, { i: { response: '{not json' } });
    expect(malformed.body.errors[0].extensions.code).to.equal('VALIDATION_ERROR');

    const DELETE = 'mutation ($i: MfaDeleteFactorInput!) { mfaDeleteFactor(input: $i) { message } }';
    expect((await gql(http, DELETE, { i: { id: factor.id } }, a.accessToken)).body.errors[0].extensions.code).to.equal('AUTH_MFA_REQUIRED');
    const codes = await gql(http, 'mutation { mfaRecoveryCodes { recoveryCodes } }', {}, strong);
    expect(codes.body.data.mfaRecoveryCodes.recoveryCodes).to.have.length(10);
    expect((await gql(http, DELETE, { i: { id: factor.id } }, strong)).body.data.mfaDeleteFactor.message).to.be.a('string');
    expect((await gql(http, '{ mfaFactors { factors { id } recoveryCodesLeft } }', {}, strong)).body.data.mfaFactors).to.deep.equal({
      factors: [],
      recoveryCodesLeft: 0,
    });
    expect((await http.get('/auth/me', bearer(strong))).status).to.equal(200);
  });
});
