import { createServer, type Server } from 'node:http';
import { expect } from 'chai';
import Provider from 'oidc-provider';
import type { Browser, Page } from 'playwright-core';
import type { TestApi } from '../../support/api.js';
import { launchChromium } from '../../support/chromium.js';
import { freePort, setProviders, startProviderApi } from './support.js';

// End to end in Debian's Chromium against oidc-provider (a certified OpenID Provider) run by
// this test: a single-page application starts the sign-in with its own PKCE pair, the user signs
// in at the provider's own pages, the browser lands back on the application with a one-time code,
// and the page exchanges it and calls /auth/me — all in the browser, as an application would.

const PROJECT = 'e2e';

/** The application: one page that starts a provider sign-in, and on landing exchanges the code. */
function appPage(api: string): string {
  return `<!doctype html><meta charset="utf-8"><title>app</title>
<button id="go">Sign in with the provider</button><pre id="out"></pre>
<script type="module">
const api = ${JSON.stringify(api)};
const b64url = (bytes) => btoa(String.fromCharCode(...bytes)).replace(/\\+/g, '-').replace(/\\//g, '_').replace(/=+$/, '');
const headers = { 'content-type': 'application/json', 'x-project-id': ${JSON.stringify(PROJECT)} };
document.getElementById('go').onclick = async () => {
  const verifier = b64url(crypto.getRandomValues(new Uint8Array(32)));
  const challenge = b64url(new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier))));
  sessionStorage.setItem('verifier', verifier);
  const q = new URLSearchParams({ projectId: ${JSON.stringify(PROJECT)}, redirect_to: location.origin + '/app', code_challenge: challenge });
  location.assign(api + '/auth/providers/idp/authorize?' + q);
};
const code = new URLSearchParams(location.search).get('code');
if (code) {
  const res = await fetch(api + '/auth/providers/token', { method: 'POST', headers, body: JSON.stringify({ code, codeVerifier: sessionStorage.getItem('verifier') }) });
  const pair = await res.json();
  const me = await fetch(api + '/auth/me', { headers: { ...headers, authorization: 'Bearer ' + pair.accessToken } });
  const ids = await fetch(api + '/auth/identities', { headers: { ...headers, authorization: 'Bearer ' + pair.accessToken } });
  document.getElementById('out').textContent = JSON.stringify({ landedAt: location.href, exchange: res.status, pair, me: await me.json(), identities: await ids.json() });
}
</script>`;
}

describe('auth providers: end to end in Chromium against oidc-provider', function () {
  this.timeout(180_000);
  let t: TestApi;
  let browser: Browser;
  let idp: Server;
  let app: Server;
  let appUrl: string;

  before(async function () {
    this.timeout(15 * 60_000); // a first run may have to install Chromium
    t = await startProviderApi();
    await t.provision({ projectId: PROJECT, name: 'master' });
    const appPort = await freePort();
    appUrl = `http://127.0.0.1:${appPort}`;
    app = createServer((req, res) => {
      if (!req.url?.startsWith('/app')) return void res.writeHead(404).end();
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(appPage(t.url));
    });
    await new Promise<void>((resolve) => app.listen(appPort, '127.0.0.1', resolve));

    const idpPort = await freePort();
    const issuer = `http://127.0.0.1:${idpPort}`;
    const provider = new Provider(issuer, {
      clients: [
        {
          client_id: 'walgate',
          client_secret: 'a-long-enough-client-secret-for-the-e2e-test',
          redirect_uris: [`${t.url}/auth/providers/idp/callback`],
          response_types: ['code'],
          grant_types: ['authorization_code'],
        },
      ],
      claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
      findAccount: (_ctx: unknown, sub: string) => ({
        accountId: sub,
        claims: () => ({ sub, email: `${sub}@idp.example`, email_verified: true, name: 'Ada Lovelace' }),
      }),
      cookies: { keys: ['e2e-cookie-signing-key'] },
      features: { devInteractions: { enabled: true } },
    });
    idp = provider.listen(idpPort, '127.0.0.1');
    await new Promise<void>((resolve) => idp.once('listening', () => resolve()));

    await setProviders(t, PROJECT, [
      {
        id: 'idp',
        kind: 'oidc',
        issuer,
        clientId: 'walgate',
        clientSecret: 'a-long-enough-client-secret-for-the-e2e-test',
        allowedRedirectUrls: [`${appUrl}/app`],
      },
    ]);
    const token = await t.managementToken(PROJECT);
    const cors = await fetch(`${t.url}/api/rest/_environment`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${token}`, 'x-project-id': PROJECT, environment: 'master', 'content-type': 'application/json' },
      body: JSON.stringify({ corsOrigins: [appUrl] }),
    });
    expect(cors.status).to.equal(200);
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await new Promise<void>((resolve) => (idp ? idp.close(() => resolve()) : resolve()));
    await new Promise<void>((resolve) => (app ? app.close(() => resolve()) : resolve()));
    await t?.close();
  });

  /** Starts at the application, signs in at the provider's own pages if it asks, and returns what the application saw. */
  async function signIn(page: Page, login: string) {
    // The provider's pages import a web font: this machine reaches no such host, and need not wait for it.
    await page.route(/^https:\/\//, (route) => route.abort());
    await page.goto(`${appUrl}/app`);
    await page.click('#go');
    for (let i = 0; i < 4; i++) {
      await page.waitForURL((u) => u.origin === appUrl || u.pathname.startsWith('/interaction/'), { timeout: 30_000 });
      if (new URL(page.url()).origin === appUrl) break;
      if (await page.locator('input[name=login]').count()) {
        await page.fill('input[name=login]', login);
        await page.fill('input[name=password]', 'anything');
      }
      // The provider's pages post to themselves and redirect (the consent page may have the login page's URL).
      await Promise.all([page.waitForNavigation({ waitUntil: 'load', timeout: 30_000 }), page.click('button[type=submit]')]);
    }
    await page.waitForFunction("document.getElementById('out')?.textContent", undefined, { timeout: 30_000 });
    return JSON.parse((await page.textContent('#out'))!);
  }

  it('signs in at the provider, lands on the application with a code, exchanges it, and /auth/me answers; the second sign-in is the same user', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    const first = await signIn(page, 'ada');
    const landed = new URL(first.landedAt);
    expect(landed.origin + landed.pathname).to.equal(`${appUrl}/app`);
    expect([...landed.searchParams.keys()]).to.deep.equal(['code']);
    expect(first.landedAt).not.to.include(first.pair.accessToken.slice(0, 20));
    expect(first.exchange).to.equal(200);
    expect(first.me.user).to.include({ email: 'ada@idp.example', emailVerified: true, name: 'Ada Lovelace' });
    expect(first.identities.identities).to.have.length(1);
    expect(first.identities.identities[0]).to.include({ provider: 'idp', subject: 'ada' });

    // Again, in the same browser: the provider remembers the user; walgate gives the same account.
    const second = await signIn(page, 'ada');
    expect(second.exchange).to.equal(200);
    expect(second.me.user.id).to.equal(first.me.user.id);
    expect(second.me.session.id).not.to.equal(first.me.session.id);
    expect(second.identities.identities).to.have.length(1);
    await context.close();

    // Someone else at the provider is someone else here.
    const other = await browser.newContext();
    const third = await signIn(await other.newPage(), 'grace');
    expect(third.me.user.email).to.equal('grace@idp.example');
    expect(third.me.user.id).not.to.equal(first.me.user.id);
    await other.close();
  });
});
