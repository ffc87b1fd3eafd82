import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import type { Browser, CDPSession, Page } from 'playwright-core';
import { launchChromium } from '../../support/chromium.js';
import type { TestApi } from '../../support/api.js';
import type { HttpClient } from '../../support/http.js';
import { bearer, GENEROUS_LIMITS, PASSWORD, signUpAndConfirm, startAuthApi } from '../support.js';
import { claimsOf } from './support.js';

// Passkeys in Debian's Chromium with a virtual authenticator (the DevTools protocol's WebAuthn
// domain). The test serves a page on http://localhost (a secure context) that loads
// @simplewebauthn/browser; the page talks to the authenticator, the test talks to the api.

// The package exports only its ES module; the page takes the UMD bundle it ships beside it.
const BROWSER_BUNDLE = new URL('../../../../node_modules/@simplewebauthn/browser/dist/bundle/index.umd.min.js', import.meta.url);

const PAGE = `<!doctype html><html><head><meta charset="utf-8"><title>passkeys</title>
<script src="/simplewebauthn-browser.js"></script></head><body>passkey test page</body></html>`;

describe('auth mfa: passkeys in Chromium with a virtual authenticator', function () {
  this.timeout(120_000);
  let t: TestApi;
  let http: HttpClient;
  let pages: Server;
  let origin: string;
  let browser: Browser;
  let page: Page;
  let cdp: CDPSession;
  let authenticatorId: string;

  before(async () => {
    t = await startAuthApi({
      overrides: {
        rateLimits: { ...GENEROUS_LIMITS, passkeyLoginPerIp: { name: 'passkey-login-ip', points: 10_000, durationSeconds: 60 } },
      },
    });
    ({ http } = await t.provision({ projectId: 'passkeys', name: 'master' }));
    const bundle = await readFile(BROWSER_BUNDLE);
    pages = createServer((req, res) => {
      if (req.url === '/simplewebauthn-browser.js') res.writeHead(200, { 'content-type': 'text/javascript' }).end(bundle);
      else res.writeHead(200, { 'content-type': 'text/html' }).end(PAGE);
    });
    await new Promise<void>((resolve) => pages.listen(0, resolve));
    origin = `http://localhost:${(pages.address() as AddressInfo).port}`;
    const manage = bearer(await t.managementToken('passkeys'));
    const patched = await http.patch(
      '/api/rest/_environment',
      { webauthn: { rpId: 'localhost', rpName: 'Passkey shop', origins: [origin] } },
      manage,
    );
    expect(patched.status, JSON.stringify(patched.body)).to.equal(200);

    browser = await launchChromium();
    page = await browser.newPage();
    await page.goto(`${origin}/`);
    expect(await page.evaluate(() => (globalThis as any).isSecureContext)).to.equal(true);
    cdp = await page.context().newCDPSession(page);
    await cdp.send('WebAuthn.enable');
    ({ authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
      options: {
        protocol: 'ctap2',
        transport: 'internal',
        hasResidentKey: true,
        hasUserVerification: true,
        isUserVerified: true,
        automaticPresenceSimulation: true,
      },
    }));
  });
  after(async () => {
    await browser?.close();
    await new Promise((resolve) => pages?.close(resolve));
    await t?.close();
  });

  const create = (optionsJSON: unknown) =>
    page.evaluate((o) => (globalThis as any).SimpleWebAuthnBrowser.startRegistration({ optionsJSON: o }), optionsJSON as any);
  const get = (optionsJSON: unknown) =>
    page.evaluate((o) => (globalThis as any).SimpleWebAuthnBrowser.startAuthentication({ optionsJSON: o }), optionsJSON as any);
  const loginOptions = async (body?: unknown) => {
    const r = await http.post('/auth/passkeys/login/options', body);
    expect(r.status, JSON.stringify(r.body)).to.equal(200);
    return r.body;
  };

  it('registration, passwordless login (amr [webauthn], aal2), the passkey as a second factor, a replayed assertion refused', async () => {
    const a = await signUpAndConfirm(t, http);
    const options = await http.post('/auth/passkeys/register/options', undefined, bearer(a.accessToken));
    expect(options.status, JSON.stringify(options.body)).to.equal(200);
    expect(options.body.rp).to.deep.equal({ name: 'Passkey shop', id: 'localhost' });
    expect(options.body.user.name).to.equal(a.email);
    const created = await create(options.body);
    const registered = await http.post('/auth/passkeys/register/verify', { response: created, name: 'laptop' }, bearer(a.accessToken));
    expect(registered.status, JSON.stringify(registered.body)).to.equal(200);
    expect(registered.body.factor).to.include({ type: 'webauthn', name: 'laptop' });
    expect(registered.body.recoveryCodes).to.have.length(10);
    // The same registration again is refused: the user now has a factor, so this aal1 token may
    // add no other (issue 36) — and its challenge was answered once anyway.
    const again = await http.post('/auth/passkeys/register/verify', { response: created }, bearer(a.accessToken));
    expect(again.status).to.equal(403);
    expect(again.body.error).to.equal('AUTH_MFA_REQUIRED');

    // Passwordless: no e-mail, no password; the passkey names its user.
    const assertion = await get(await loginOptions());
    const signedIn = await http.post('/auth/passkeys/login/verify', { response: assertion });
    expect(signedIn.status, JSON.stringify(signedIn.body)).to.equal(200);
    const claims = claimsOf(signedIn.body.accessToken);
    expect(claims.sub).to.equal(a.userId);
    expect(claims.amr).to.deep.equal(['webauthn']);
    expect(claims.aal).to.equal('aal2');
    expect((await http.get('/auth/me', bearer(signedIn.body.accessToken))).body.user.id).to.equal(a.userId);

    // The same assertion again: its challenge is spent and its counter is not new.
    const replay = await http.post('/auth/passkeys/login/verify', { response: assertion });
    expect(replay.status).to.equal(400);
    expect(replay.body.error).to.equal('AUTH_INVALID_CODE');

    // With a password, the passkey is now the second factor.
    const login = await http.post('/auth/login', { email: a.email, password: PASSWORD });
    expect(login.body.mfaRequired).to.equal(true);
    expect(login.body.factors).to.deep.equal([{ id: registered.body.factor.id, type: 'webauthn' }]);
    const second = await get(await loginOptions({ mfaToken: login.body.mfaToken }));
    const pair = await http.post('/auth/passkeys/login/verify', { response: second, mfaToken: login.body.mfaToken });
    expect(pair.status, JSON.stringify(pair.body)).to.equal(200);
    expect(claimsOf(pair.body.accessToken)).to.deep.include({ amr: ['pwd', 'webauthn'], aal: 'aal2' });
  });

  it('an assertion whose signature counter did not increase is refused, though its challenge is fresh and its signature good', async () => {
    // One passkey on the authenticator, so that every passwordless assertion below is this one's.
    await cdp.send('WebAuthn.clearCredentials', { authenticatorId });
    const a = await signUpAndConfirm(t, http);
    const created = await create((await http.post('/auth/passkeys/register/options', undefined, bearer(a.accessToken))).body);
    expect((await http.post('/auth/passkeys/register/verify', { response: created }, bearer(a.accessToken))).status).to.equal(200);

    // Two assertions from the authenticator (counters n and n+1), for two live challenges.
    const older = await get(await loginOptions());
    const newer = await get(await loginOptions());
    expect([older.id, newer.id]).to.deep.equal([created.id, created.id]);
    expect((await http.post('/auth/passkeys/login/verify', { response: newer })).status).to.equal(200);
    // The older one's challenge is still unanswered: only its counter, behind the stored one, refuses it.
    const behind = await http.post('/auth/passkeys/login/verify', { response: older });
    expect(behind.status).to.equal(400);
    expect(behind.body.error).to.equal('AUTH_INVALID_CODE');

    // A cloned authenticator: the same key with its counter back at an old value.
    const { credentials } = await cdp.send('WebAuthn.getCredentials', { authenticatorId });
    const credential = credentials.find((c) => c.credentialId === Buffer.from(created.rawId, 'base64url').toString('base64'));
    expect(credential, 'the virtual authenticator holds the registered passkey').to.not.equal(undefined);
    const stored = await t.ctx.pool.query('SELECT counter FROM walgate.mfa_factors WHERE credential_id = $1', [created.id]);
    expect(Number(stored.rows[0].counter)).to.be.greaterThan(0);
    await cdp.send('WebAuthn.removeCredential', { authenticatorId, credentialId: credential!.credentialId });
    await cdp.send('WebAuthn.addCredential', { authenticatorId, credential: { ...credential!, signCount: 0 } });
    const cloned = await get(await loginOptions());
    expect(cloned.id).to.equal(created.id);
    const refused = await http.post('/auth/passkeys/login/verify', { response: cloned });
    expect(refused.status).to.equal(400);
    expect(refused.body.error).to.equal('AUTH_INVALID_CODE');

    // Its counter moved on past the stored one: the authenticator is believed again.
    await cdp.send('WebAuthn.removeCredential', { authenticatorId, credentialId: credential!.credentialId });
    await cdp.send('WebAuthn.addCredential', {
      authenticatorId,
      credential: { ...credential!, signCount: Number(stored.rows[0].counter) + 10 },
    });
    const ahead = await http.post('/auth/passkeys/login/verify', { response: await get(await loginOptions()) });
    expect(ahead.status, JSON.stringify(ahead.body)).to.equal(200);
  });
});
