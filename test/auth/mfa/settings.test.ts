import { expect } from 'chai';
import type { TestApi } from '../../support/api.js';
import { walgate } from '../../support/cli.js';
import type { HttpClient } from '../../support/http.js';
import { bearer, signUpAndConfirm, startAuthApi } from '../support.js';

// The environment settings of MFA: `mfa` and the WebAuthn relying party, through the management
// API and the CLI, with their defaults taken from PUBLIC_URL and the project.

describe('auth mfa: settings (mfa, webauthn relying party)', function () {
  this.timeout(60_000);
  let t: TestApi;
  let http: HttpClient;
  let manage: ReturnType<typeof bearer>;

  before(async () => {
    t = await startAuthApi();
    ({ http } = await t.provision({ projectId: 'mfa-settings', name: 'master' }));
    manage = bearer(await t.managementToken('mfa-settings'));
  });
  after(() => t.close());

  it('defaults: mfa optional, the relying party is PUBLIC_URL’s host and origin and the project’s name', async () => {
    const settings = await http.get('/api/rest/_environment', manage);
    expect(settings.body).to.deep.include({ mfa: 'optional', webauthn: { origins: [] } });
    const a = await signUpAndConfirm(t, http);
    const options = await http.post('/auth/passkeys/register/options', undefined, bearer(a.accessToken));
    expect(options.body.rp).to.deep.equal({ name: 'mfa-settings', id: 'walgate.test' });
  });

  it('PATCH refuses a bad mode, an origin with a path and unknown relying-party keys', async () => {
    const bad = await http.patch(
      '/api/rest/_environment',
      { mfa: 'always', webauthn: { rpId: 'example.com', origins: ['https://example.com/login'], rpIcon: 'x' } },
      manage,
    );
    expect(bad.status).to.equal(400);
    expect(bad.body.error).to.equal('VALIDATION_ERROR');
    const paths = (bad.body.violations as Array<{ path: string }>).map((v) => v.path).join(' ');
    expect(paths)
      .to.match(/\bmfa\b/)
      .and.to.match(/webauthn/);
    expect((await http.get('/api/rest/_environment', manage)).body.mfa).to.equal('optional');
  });

  it('walgate project set takes mfa and the relying party (origins as a comma-separated list); the options follow', async () => {
    const r = await walgate(t, [
      'project',
      'set',
      'mfa-settings',
      '--set',
      'mfa=required',
      '--set',
      'webauthn.rpId=example.com',
      '--set',
      'webauthn.rpName=Example',
      '--set',
      'webauthn.origins=https://example.com,https://app.example.com',
    ]);
    expect(r.code, r.stderr).to.equal(0);
    const settings = await http.get('/api/rest/_environment', manage);
    expect(settings.body.mfa).to.equal('required');
    expect(settings.body.webauthn).to.deep.equal({
      rpId: 'example.com',
      rpName: 'Example',
      origins: ['https://example.com', 'https://app.example.com'],
    });
    const a = await signUpAndConfirm(t, http);
    const options = await http.post('/auth/passkeys/register/options', undefined, bearer(a.accessToken));
    expect(options.body.rp).to.deep.equal({ name: 'Example', id: 'example.com' });
    expect(options.body.authenticatorSelection).to.deep.include({ residentKey: 'required' });
    // Back to optional: the aal1 token is accepted again.
    expect((await http.get('/auth/me', bearer(a.accessToken))).body.error).to.equal('AUTH_MFA_REQUIRED');
    expect((await walgate(t, ['project', 'set', 'mfa-settings', '--set', 'mfa=optional'])).code).to.equal(0);
    expect((await http.get('/auth/me', bearer(a.accessToken))).status).to.equal(200);
  });
});
