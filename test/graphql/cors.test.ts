import { expect } from 'chai';
import type { TestApi } from '../support/api.js';
import type { HttpClient } from '../support/http.js';
import { bearer, startAuthApi } from '../auth/support.js';

// /graphql follows the same per-environment `corsOrigins` as /auth/*: a browser app on an allowed
// origin can call it, any other origin gets no CORS headers, and credentials are never allowed.
describe('graphql: CORS per environment, as on /auth/*', function () {
  this.timeout(60_000);
  let t: TestApi;
  let http: HttpClient;
  const APP = 'https://app.example.com';
  const query = { query: 'mutation { refreshToken(input: { refreshToken: "x" }) { accessToken } }' };

  before(async () => {
    t = await startAuthApi();
    ({ http } = await t.provision({ projectId: 'gqlcors', name: 'master' }));
    const token = await t.managementToken('gqlcors');
    const res = await http.patch('/api/rest/_environment', { corsOrigins: [APP] }, bearer(token));
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
  });
  after(() => t?.close());

  const preflight = (origin: string, path = '/graphql') =>
    http.request('OPTIONS', path, {
      headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type, x-project-id' },
    });

  it('a preflight from an allowed origin is 204 with the headers; from another origin, none', async () => {
    for (const path of ['/graphql', '/graphql?projectId=gqlcors&environment=master']) {
      const ok = await preflight(APP, path);
      expect(ok.status, path).to.equal(204);
      expect(ok.headers.get('access-control-allow-origin'), path).to.equal(APP);
      expect(ok.headers.get('access-control-allow-methods'), path).to.contain('POST');
      expect(ok.headers.get('access-control-allow-headers')?.toLowerCase(), path).to.contain('x-project-id');
      expect(ok.headers.get('access-control-allow-credentials'), path).to.equal(null);
    }
    const other = await preflight('https://evil.example');
    expect(other.headers.get('access-control-allow-origin')).to.equal(null);
    expect(other.headers.get('access-control-allow-methods')).to.equal(null);
    // A preflight naming an environment that does not allow the origin gets nothing either.
    await t.provision({ projectId: 'gqlcors-none', name: 'master' });
    const named = await preflight(APP, '/graphql?projectId=gqlcors-none');
    expect(named.headers.get('access-control-allow-origin')).to.equal(null);
  });

  it('the real answer carries the origin only for the environment that allows it', async () => {
    const mine = await http.post('/graphql', query, { headers: { origin: APP } });
    expect(mine.status).to.equal(200);
    expect(mine.body.errors?.[0]?.extensions?.code).to.equal('AUTH_TOKEN_INVALID');
    expect(mine.headers.get('access-control-allow-origin')).to.equal(APP);
    expect(mine.headers.get('access-control-expose-headers')).to.contain('Retry-After');
    const { http: other } = await t.provision({ projectId: 'gqlcors-other', name: 'master' });
    const theirs = await other.post('/graphql', query, { headers: { origin: APP } });
    expect(theirs.headers.get('access-control-allow-origin')).to.equal(null);
    const stranger = await http.post('/graphql', query, { headers: { origin: 'https://evil.example' } });
    expect(stranger.headers.get('access-control-allow-origin')).to.equal(null);
  });
});
