import { expect } from 'chai';
import type { TestApi } from '../support/api.js';
import type { HttpClient } from '../support/http.js';
import { codeIn } from '../support/smtp.js';
import { bearer, signUpAndConfirm, startAuthApi } from '../auth/support.js';

// What HTTP says around the bodies: nothing with a token or user data is cached, a 401 names its
// scheme (RFC 6750), and a 405 says which methods the path has (RFC 9110).
describe('reliability: HTTP hygiene of answers', () => {
  let t: TestApi;
  let http: HttpClient;
  before(async () => {
    t = await startAuthApi();
    ({ http } = await t.provision({ projectId: 'shop', name: 'master' }));
  });
  after(() => t?.close());

  it('tokens, user data and errors carry Cache-Control: no-store; the key set may be cached', async () => {
    const a = await signUpAndConfirm(t, http);
    const login = await http.post('/auth/login', { email: a.email, password: a.password });
    expect(login.headers.get('cache-control')).to.equal('no-store');
    expect((await http.get('/auth/me', bearer(login.body.accessToken))).headers.get('cache-control')).to.equal('no-store');
    expect((await http.post('/auth/login', { email: a.email, password: 'wrong wrong wrong' })).headers.get('cache-control')).to.equal(
      'no-store',
    );
    expect((await http.post('/graphql', { query: '{ jwks { keys { kid } } }' })).headers.get('cache-control')).to.equal('no-store');
    expect((await http.get('/auth/.well-known/jwks.json')).headers.get('cache-control')).to.equal('public, max-age=300');
  });

  it('a 401 names the Bearer scheme, and says invalid_token when the token was the problem', async () => {
    const me = await http.get('/auth/me', bearer('not.a.token'));
    expect(me.status).to.equal(401);
    expect(me.headers.get('www-authenticate')).to.equal('Bearer realm="walgate", error="invalid_token"');
    const login = await http.post('/auth/login', { email: 'nobody@example.com', password: 'whatever it is 42' });
    expect(login.status).to.equal(401);
    expect(login.headers.get('www-authenticate')).to.equal('Bearer realm="walgate"');
    const management = await http.get('/api/rest/_webhooks?projectId=shop&environment=master');
    expect(management.status).to.equal(401);
    expect(management.headers.get('www-authenticate')).to.match(/^Bearer realm="walgate"/);
    // No bearer credentials at all: the scheme, without an error code (RFC 6750 §3.1).
    for (const headers of [{}, { authorization: 'Basic dXNlcjpwYXNz' }] as Array<Record<string, string>>) {
      for (const res of [
        await http.get('/auth/me', { headers }),
        await http.get('/api/rest/_webhooks', { headers: { ...headers, environment: 'master' } }),
      ]) {
        expect(res.status).to.equal(401);
        expect(res.headers.get('www-authenticate'), JSON.stringify(headers)).to.equal('Bearer realm="walgate"');
      }
    }
    const wrongManagement = await http.get('/api/rest/_webhooks', {
      headers: { authorization: 'Bearer wgm_notatoken', environment: 'master' },
    });
    expect(wrongManagement.headers.get('www-authenticate')).to.equal('Bearer realm="walgate", error="invalid_token"');
  });

  it('no password, code or token reaches a log line, through every auth flow on both transports', async () => {
    const a = await signUpAndConfirm(t, http);
    const signupCode = codeIn(t.smtp.to(a.email)[0]!);
    const login = await http.post('/auth/login', { email: a.email, password: a.password });
    const refreshed = await http.post('/auth/refresh-token', { refreshToken: login.body.refreshToken });
    await http.get('/auth/me', bearer(refreshed.body.accessToken));
    await http.get(`/auth/me?token=${refreshed.body.accessToken}`); // a token in a query string too
    const viaGraphql = await http.post('/graphql', {
      query: 'mutation($i: LoginInput!) { login(input: $i) { accessToken refreshToken } }',
      variables: { i: { email: a.email, password: a.password } },
    });
    await http.post('/auth/logout', undefined, bearer(refreshed.body.accessToken));
    await http.post('/auth/recover-password', { email: a.email });
    const resetCode = codeIn(await t.smtp.waitFor(a.email, { after: 1 }));
    const newPassword = 'a different long passphrase 99';
    await http.post('/auth/reset-password', { email: a.email, code: resetCode, newPassword });
    await http.post('/auth/login', { email: a.email, password: 'a wrong password, logged?' });
    const secrets = [
      a.password,
      newPassword,
      'a wrong password, logged?',
      signupCode,
      resetCode,
      a.accessToken,
      a.refreshToken,
      login.body.accessToken,
      login.body.refreshToken,
      refreshed.body.accessToken,
      refreshed.body.refreshToken,
      viaGraphql.body.data.login.accessToken,
      viaGraphql.body.data.login.refreshToken,
    ];
    expect(t.logs.lines.length).to.be.above(10);
    for (const secret of secrets) expect(t.logs.text, 'a secret in the logs').to.not.contain(secret);
  });

  it('a 405 lists the methods the path has in Allow', async () => {
    const cases: Array<[string, string, string]> = [
      ['GET', '/auth/login', 'POST'],
      ['DELETE', '/auth/me', 'GET, HEAD, PATCH'],
      ['PUT', '/api/rest/_webhooks', 'POST, GET, HEAD'],
      ['POST', '/api/rest/_webhooks/wh_x', 'GET, PATCH, DELETE, HEAD'],
    ];
    for (const [method, path, allow] of cases) {
      const res = await http.request(method, path);
      expect(res.status, `${method} ${path}`).to.equal(405);
      expect(res.body.error).to.equal('METHOD_NOT_ALLOWED');
      expect(res.headers.get('allow')?.split(', ').sort(), `${method} ${path}`).to.deep.equal(allow.split(', ').sort());
    }
  });
});
