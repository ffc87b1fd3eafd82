import { expect } from 'chai';
import type { TestApi } from '../../support/api.js';
import { walgate } from '../../support/cli.js';
import type { HttpClient } from '../../support/http.js';
import { bearer, PASSWORD, signUpAndConfirm, startAuthApi } from '../support.js';

// An environment's settings: read and changed over the management API and with the CLI, validated
// like every other input, and in force on the next request.

describe('auth sessions: per-environment settings (GET/PATCH /api/rest/_environment, walgate project set)', function () {
  this.timeout(120_000);
  let t: TestApi;
  let http: HttpClient;
  let token: string;

  before(async () => {
    t = await startAuthApi({ env: { TRUST_PROXY: '1' } });
    ({ http } = await t.provision({ projectId: 'settings', name: 'master' }));
    token = await t.managementToken('settings');
  });
  after(() => t.close());

  const manage = () => bearer(token);

  it("GET answers every setting with the seed's defaults", async () => {
    const res = await http.get('/api/rest/_environment', manage());
    expect(res.status).to.equal(200);
    expect(res.body).to.include({
      authEnabled: true,
      tokenFormat: 'jws',
      accessTokenTtlSeconds: 900,
      refreshTokenTtlSeconds: 2_592_000,
      sessionLifetimeSeconds: 2_592_000,
      codeTtlSeconds: 600,
      codeMaxAttempts: 5,
      lockoutThreshold: 5,
      lockoutSeconds: 900,
    });
    expect(res.body.corsOrigins).to.deep.equal([]);
    expect(res.body.limits.login).to.deep.equal({ points: 20, durationSeconds: 60 });
    expect(res.body.limits.recoverPasswordPerIp).to.deep.equal({ points: 20, durationSeconds: 60 });
    expect(res.body.limits.refreshTokenPerIp).to.deep.equal({ points: 300, durationSeconds: 60 });
  });

  it('PATCH changes a subset, limits one by one, and the change is in force on the next request', async () => {
    const res = await http.patch('/api/rest/_environment', { lockoutThreshold: 2, limits: { refreshTokenPerIp: { points: 2 } } }, manage());
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    expect(res.body.lockoutThreshold).to.equal(2);
    expect(res.body.limits.refreshTokenPerIp).to.deep.equal({ points: 2, durationSeconds: 60 });
    expect(res.body.limits.login).to.deep.equal({ points: 20, durationSeconds: 60 });

    const a = await signUpAndConfirm(t, http);
    const from = { headers: { 'x-forwarded-for': '198.51.100.33' } };
    for (let i = 0; i < 2; i++) await http.post('/auth/login', { email: a.email, password: 'wrong password here' }, from);
    expect((await http.post('/auth/login', { email: a.email, password: PASSWORD }, from)).status).to.equal(423);

    const refresh = (rt: string) => http.post('/auth/refresh-token', { refreshToken: rt }, from);
    const r1 = await refresh(a.refreshToken);
    const r2 = await refresh(r1.body.refreshToken);
    const r3 = await refresh(r2.body.refreshToken);
    expect([r1.status, r2.status, r3.status]).to.deep.equal([200, 200, 429]);
    expect(Number(r3.headers.get('retry-after'))).to.be.above(0);
  });

  it('PATCH refuses unknown keys and bad values with the violations, and answers 401/403 for a missing or foreign token', async () => {
    const bad = await http.patch(
      '/api/rest/_environment',
      { lockoutThreshold: 0, corsOrigins: ['https://a.example/path'], sessionTimeout: 5 },
      manage(),
    );
    expect(bad.status).to.equal(400);
    expect(bad.body.error).to.equal('VALIDATION_ERROR');
    const paths = (bad.body.violations as Array<{ path: string }>).map((v) => v.path);
    expect(paths.join(' '))
      .to.match(/lockoutThreshold/)
      .and.to.match(/corsOrigins/);
    expect((await http.patch('/api/rest/_environment', { limits: { login: { points: -1 } } }, manage())).status).to.equal(400);
    expect((await http.get('/api/rest/_environment')).status).to.equal(401);
    await t.provision({ projectId: 'settings-other', name: 'master' });
    const foreign = await t.managementToken('settings-other');
    expect((await http.get('/api/rest/_environment', bearer(foreign))).status).to.equal(403);
  });

  it('walgate project set changes the same settings; GET shows them', async () => {
    await t.provision({ projectId: 'settings-cli', name: 'master' });
    const r = await walgate(t, [
      'project',
      'set',
      'settings-cli',
      '--set',
      'lockoutSeconds=60',
      '--set',
      'limits.signup.points=3',
      '--set',
      'corsOrigins=https://app.example.com,https://admin.example.com',
    ]);
    expect(r.code, r.stderr).to.equal(0);
    const cliToken = await t.managementToken('settings-cli');
    const res = await http.with({ 'x-project-id': 'settings-cli' }).get('/api/rest/_environment', bearer(cliToken));
    expect(res.body.lockoutSeconds).to.equal(60);
    expect(res.body.limits.signup.points).to.equal(3);
    expect(res.body.corsOrigins).to.deep.equal(['https://app.example.com', 'https://admin.example.com']);
    // A later change leaves every other setting as it was.
    expect((await walgate(t, ['project', 'set', 'settings-cli', '--set', 'lockoutThreshold=7', '--token-format', 'jwe'])).code).to.equal(0);
    const kept = await http.with({ 'x-project-id': 'settings-cli' }).get('/api/rest/_environment', bearer(cliToken));
    expect(kept.body).to.include({ lockoutThreshold: 7, lockoutSeconds: 60, tokenFormat: 'jwe' });
    expect(kept.body.corsOrigins).to.have.length(2);
    expect(kept.body.limits.signup.points).to.equal(3);
    const wrong = await walgate(t, ['project', 'set', 'settings-cli', '--set', 'lockoutSeconds=-5']);
    expect(wrong.code).to.not.equal(0);
    expect(wrong.stderr).to.contain('lockoutSeconds');
  });

  describe('CORS and response headers', () => {
    const APP = 'https://app.example.com';
    before(async () => {
      const res = await http.patch('/api/rest/_environment', { corsOrigins: [APP] }, manage());
      expect(res.status).to.equal(200);
    });

    const preflight = (origin: string, path = '/auth/login') =>
      http.request('OPTIONS', path, {
        headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type, x-project-id' },
      });

    it('a preflight from an allowed origin is 204 with the headers; from another origin, none', async () => {
      const ok = await preflight(APP);
      expect(ok.status).to.equal(204);
      expect(ok.headers.get('access-control-allow-origin')).to.equal(APP);
      expect(ok.headers.get('access-control-allow-methods')).to.contain('POST');
      expect(ok.headers.get('access-control-allow-headers')?.toLowerCase()).to.contain('x-project-id');
      expect(ok.headers.get('access-control-allow-credentials')).to.equal(null);
      const other = await preflight('https://evil.example');
      expect(other.headers.get('access-control-allow-origin')).to.equal(null);
      expect(other.headers.get('access-control-allow-methods')).to.equal(null);
    });

    it('the real answer carries the origin only for the environment that allows it', async () => {
      const mine = await http.post('/auth/refresh-token', { refreshToken: 'x' }, { headers: { origin: APP } });
      expect(mine.headers.get('access-control-allow-origin')).to.equal(APP);
      const { http: other } = await t.provision({ projectId: 'settings-nocors', name: 'master' });
      const theirs = await other.post('/auth/refresh-token', { refreshToken: 'x' }, { headers: { origin: APP } });
      expect(theirs.headers.get('access-control-allow-origin')).to.equal(null);
    });

    it('the JWKS is readable from any origin; every answer has nosniff; HSTS only over HTTPS through the trusted proxy', async () => {
      const jwks = await http.get('/auth/.well-known/jwks.json', { headers: { origin: 'https://anyone.example' } });
      expect(jwks.headers.get('access-control-allow-origin')).to.equal('*');
      for (const res of [jwks, await http.get('/healthz'), await http.get('/auth/me')]) {
        expect(res.headers.get('x-content-type-options')).to.equal('nosniff');
      }
      expect(jwks.headers.get('strict-transport-security')).to.equal(null);
      const secure = await http.get('/auth/.well-known/jwks.json', { headers: { 'x-forwarded-proto': 'https' } });
      expect(secure.headers.get('strict-transport-security')).to.match(/max-age=\d+/);
    });
  });
});
