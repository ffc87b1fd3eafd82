import { createServer, type Server } from 'node:http';
import { expect } from 'chai';
import type { TestApi } from '../../support/api.js';
import type { HttpClient } from '../../support/http.js';
import { startAuthApi } from '../support.js';
import { authorizePath, pkce, setProviders, step } from './support.js';

// The SSRF guard on provider URLs: without PROVIDER_ALLOW_PRIVATE_NETWORKS, walgate neither talks
// plain http to a provider nor connects to a loopback or private address — also when a public-looking
// name resolves to one. The listener below counts every request that reaches it: none may.

describe('auth providers: provider URLs go through the SSRF guard', function () {
  this.timeout(60_000);
  let t: TestApi;
  let http: HttpClient;
  let listener: Server;
  let port: number;
  let reached = 0;

  before(async () => {
    listener = createServer((_req, res) => {
      reached++;
      res.writeHead(500).end();
    });
    await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
    port = (listener.address() as { port: number }).port;
    // A resolver that says the provider's name is this machine (as a rebinding DNS would).
    t = await startAuthApi({ overrides: { lookup: async () => [{ address: '127.0.0.1', family: 4 }] } });
    ({ http } = await t.provision({ projectId: 'ssrf', name: 'master' }));
  });
  after(async () => {
    await t.close();
    await new Promise<void>((resolve) => listener.close(() => resolve()));
  });

  const start = (environment = 'master') =>
    step(
      t.url + authorizePath('idp', { projectId: 'ssrf', environment, redirectTo: 'https://app.example.com/', challenge: pkce().challenge }),
    );
  const provider = (issuer: string) => ({
    id: 'idp',
    kind: 'oidc',
    issuer,
    clientId: 'c',
    allowedRedirectUrls: ['https://app.example.com/'],
  });

  it('refuses http:, loopback literals and names that resolve to a private address, before any request', async () => {
    for (const [issuer, reason] of [
      [`http://127.0.0.1:${port}`, /https/i],
      [`https://127.0.0.1:${port}`, /private or reserved/],
      [`https://[::ffff:127.0.0.1]:${port}`, /private or reserved/],
      [`https://idp.example.com:${port}`, /private or reserved/],
    ] as const) {
      await setProviders(t, 'ssrf', [provider(issuer)]);
      const res = await start();
      expect(res.status, issuer).to.equal(502);
      expect(res.body.error, issuer).to.equal('AUTH_PROVIDER_UNAVAILABLE');
      expect(res.body.message, issuer).to.match(reason);
    }
    expect(reached, 'requests that reached the private listener').to.equal(0);
    expect((await http.get('/auth/me')).status).to.equal(401); // the api is fine
  });

  it('limits sign-ins started per client address (limits.providerSignInPerIp)', async () => {
    // An environment of its own: its limit counts from zero.
    await t.provision({ projectId: 'ssrf', name: 'limited' });
    await setProviders(t, 'ssrf', [provider(`https://127.0.0.1:${port}`)], 'limited');
    const token = await t.managementToken('ssrf');
    const headers = { authorization: `Bearer ${token}`, environment: 'limited' };
    const limited = await http.patch('/api/rest/_environment', { limits: { providerSignInPerIp: { points: 1 } } }, { headers });
    expect(limited.status, JSON.stringify(limited.body)).to.equal(200);
    const first = await start('limited');
    expect(first.status, JSON.stringify(first.body)).to.equal(502);
    const refused = await start('limited');
    expect(refused.status).to.equal(429);
    expect(refused.body.error).to.equal('RATE_LIMIT_EXCEEDED');
  });
});
