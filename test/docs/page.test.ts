import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import type { Browser } from 'playwright-core';
import { startTestApi, type TestApi } from '../support/api.js';
import { launchChromium } from '../support/chromium.js';
import { documentedOperations } from '../support/openapi.js';

// /docs in a real browser: the reference lists every operation of /openapi.json, loads nothing
// from another origin, and trips no Content-Security-Policy rule.
//
// The screenshot goes to a temporary file; to refresh the one in the README:
//   DOCS_SCREENSHOT=docs/api-reference.png npx mocha dist/test/docs/page.test.js

describe('API reference page: /docs in Chromium', function () {
  this.timeout(120_000); // Swagger UI renders every operation: slow on a loaded machine
  let t: TestApi;
  let browser: Browser;
  let shots: string;

  before(async function () {
    this.timeout(15 * 60_000); // a first run may have to install Chromium
    t = await startTestApi();
    browser = await launchChromium();
    shots = await mkdtemp(path.join(tmpdir(), 'walgate-docs-'));
  });
  after(async () => {
    await browser?.close();
    await t?.close();
    if (shots) await rm(shots, { recursive: true, force: true });
  });

  it('lists every documented operation, offline, within its CSP', async () => {
    const doc = (await t.http.get('/openapi.json')).body;
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const elsewhere: string[] = [];
    const problems: string[] = [];
    await page.route('**/*', (route) => {
      const url = route.request().url();
      if (url.startsWith(`${t.url}/`) || url.startsWith('data:')) return route.continue();
      elsewhere.push(url);
      return route.abort();
    });
    page.on('console', (m) => {
      if (m.type() === 'error' || m.type() === 'warning') problems.push(`${m.type()}: ${m.text()}`);
    });
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));

    const res = await page.goto(`${t.url}/docs`);
    expect(res?.status()).to.equal(200);
    expect(res?.headers()['content-security-policy']).to.contain("script-src 'self'");

    const operations = documentedOperations(doc);
    await page.locator('.opblock').nth(operations.length - 1).waitFor({ timeout: 30_000 });
    const listed: string[] = [];
    for (const summary of await page.locator('.opblock-summary:visible').all()) {
      const text = async (selector: string) => (await summary.locator(selector).innerText()).replace(/[\u200b\s]/g, '');
      listed.push(`${await text('.opblock-summary-method')} ${await text('.opblock-summary-path')}`);
    }
    // The requests walgate sends (the document's `webhooks`) are listed by name beside the paths.
    const sent = Object.entries(doc.webhooks ?? {}).flatMap(([name, item]) => Object.keys(item as object).map((m) => `${m.toUpperCase()} ${name}`));
    expect(sent).to.include('POST delivery');
    expect(listed).to.have.members([...operations.map((o) => `${o.method.toUpperCase()} ${o.path}`), ...sent]);
    const body = await page.innerText('body');
    for (const heading of ['walgate', 'Authentication', 'Webhooks', 'Sign up', 'Create a subscription']) expect(body).to.contain(heading);

    const file = process.env.DOCS_SCREENSHOT ?? path.join(shots, 'api-reference.png');
    await page.screenshot({ path: file, fullPage: true });
    expect((await stat(file)).size).to.be.greaterThan(10_000);

    expect(elsewhere, 'requests to other origins').to.deep.equal([]);
    expect(problems, 'console errors and warnings (CSP violations show here)').to.deep.equal([]);
    await page.close();
  });

  it('an operation opens to show its error responses', async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await page.goto(`${t.url}/docs#/Authentication/login`);
    await page.waitForSelector('#operations-Authentication-login .responses-table', { timeout: 30_000 });
    const text = await page.innerText('#operations-Authentication-login');
    for (const expected of ['423', 'AUTH_ACCOUNT_LOCKED', '429', 'RATE_LIMIT_EXCEEDED', 'AUTH_INVALID_CREDENTIALS']) expect(text).to.contain(expected);
    await page.close();
  });
});
