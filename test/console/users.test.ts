import { expect } from 'chai';
import type { Browser, Page } from 'playwright-core';
import { signUpAndConfirm, startAuthApi } from '../auth/support.js';
import { enrolTotp } from '../auth/mfa/support.js';
import type { TestApi } from '../support/api.js';
import { launchChromium } from '../support/chromium.js';
import type { HttpClient } from '../support/http.js';
import { expectAccessible } from './support.js';

// The console's Users page in Chromium: search, one user's sessions and events, disable and
// enable, log out everywhere, delete with a confirmation. axe-core checks each view; the browser
// reports no error.

describe('console: the Users page in Chromium', function () {
  this.timeout(120_000);
  let t: TestApi;
  let http: HttpClient;
  let browser: Browser;
  let page: Page;
  const problems: string[] = [];

  before(async function () {
    this.timeout(15 * 60_000);
    t = await startAuthApi();
    ({ http } = await t.provision({ projectId: 'people', name: 'master' }));
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    page.setDefaultTimeout(10_000);
    page.on('console', (m) => {
      if (m.type() === 'error' || m.type() === 'warning') problems.push(`${m.type()}: ${m.text()}`);
    });
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  });
  after(async () => {
    await browser?.close();
    await t?.close();
  });

  it('searches users, shows one with sessions and events, disables, enables, logs out and deletes', async () => {
    const ada = await signUpAndConfirm(t, http, 'ada.lovelace@example.com');
    await signUpAndConfirm(t, http, 'alan.turing@example.com');
    const token = await t.managementToken('people');

    await page.goto(`${t.url}/console`);
    await page.locator('#project-id').fill('people');
    await page.locator('#token').fill(token);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Subscriptions' }).waitFor();
    await page.getByText('No subscription in this environment yet.').waitFor();

    await page.getByRole('link', { name: 'Users' }).click();
    await page.getByRole('heading', { name: 'Users' }).waitFor();
    await page.getByRole('link', { name: 'alan.turing@example.com' }).waitFor();
    await expectAccessible(page, 'users list');
    // The status filter is as wide as its options, not stretched across the page.
    const select = (await page.locator('#user-status').boundingBox())!;
    const row = (await page.locator('form', { has: page.locator('#user-status') }).boundingBox())!;
    const widths = { select: select.width, row: row.width };
    expect(widths.select)
      .to.be.below(200)
      .and.below(widths.row / 3);
    await page.getByLabel('E-mail starts with').fill('ada');
    await page.getByRole('button', { name: 'Search' }).click();
    // The search's answer: the other user is gone from the list (not the list from before it).
    await page.getByRole('link', { name: 'alan.turing@example.com' }).waitFor({ state: 'detached' });
    await page.getByRole('link', { name: 'ada.lovelace@example.com' }).waitFor();
    expect(await page.locator('tbody tr').count()).to.equal(1);

    await page.getByRole('link', { name: 'ada.lovelace@example.com' }).click();
    await page.getByRole('heading', { name: 'ada.lovelace@example.com' }).waitFor();
    expect(await page.locator('#user-state').innerText()).to.equal('active');
    expect(await page.getByRole('region', { name: 'Events' }).innerText())
      .to.contain('user.signed_up')
      .and.contain('user.logged_in');
    expect(await page.getByRole('region', { name: 'Sessions' }).innerText()).to.contain('live');
    await expectAccessible(page, 'user detail');

    await page.getByRole('button', { name: 'Disable' }).click();
    await page.getByText('User disabled: every session ended.').waitFor();
    expect(await page.locator('#user-state').innerText()).to.equal('disabled');
    expect((await http.get('/auth/me', { headers: { authorization: `Bearer ${ada.accessToken}` } })).status).to.equal(401);
    await page.getByRole('button', { name: 'Enable' }).click();
    await page.getByText('User enabled.').waitFor();
    expect(await page.locator('#user-state').innerText()).to.equal('active');

    const again = await http.post('/auth/login', { email: ada.email, password: ada.password });
    await page.getByRole('button', { name: 'Log out everywhere' }).click();
    await page.getByText('Logged out everywhere.').waitFor();
    expect((await http.get('/auth/me', { headers: { authorization: `Bearer ${again.body.accessToken}` } })).status).to.equal(401);

    // Delete asks first: Cancel keeps the user, confirming removes them.
    await page.getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Cancel' }).click();
    expect((await t.ctx.pool.query('SELECT 1 FROM walgate.users WHERE id = $1', [ada.userId])).rowCount).to.equal(1);
    await page.getByRole('button', { name: 'Delete' }).click();
    await expectAccessible(page, 'delete confirmation');
    await page.getByRole('dialog').getByRole('button', { name: 'Delete user' }).click();
    await page.getByRole('heading', { name: 'Users' }).waitFor();
    await page.getByRole('link', { name: 'alan.turing@example.com' }).waitFor();
    expect((await t.ctx.pool.query('SELECT 1 FROM walgate.users WHERE id = $1', [ada.userId])).rowCount).to.equal(0);
    expect(await page.getByRole('link', { name: 'ada.lovelace@example.com' }).count()).to.equal(0);

    expect(problems).to.deep.equal([]);
  });

  it("shows a user's second factors and removes one after asking", async () => {
    const grace = await signUpAndConfirm(t, http, 'grace.hopper@example.com');
    const { factorId } = await enrolTotp(t, http, grace);
    const token = await t.managementToken('people');
    const own = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    own.setDefaultTimeout(10_000);
    own.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    await own.goto(`${t.url}/console`);
    await own.locator('#project-id').fill('people');
    await own.locator('#token').fill(token);
    await own.getByRole('button', { name: 'Sign in' }).click();
    await own.getByRole('heading', { name: 'Subscriptions' }).waitFor();
    await own.goto(`${t.url}/console#/users/${grace.userId}`);
    await own.getByRole('heading', { name: 'grace.hopper@example.com' }).waitFor();
    const factors = own.getByRole('region', { name: 'Second factors' });
    expect(await factors.innerText())
      .to.contain('Authenticator app')
      .and.contain('phone');
    expect(await factors.innerText()).not.to.contain(factorId); // ids are for the API, the page names the factor

    await own.getByRole('button', { name: 'Remove factor phone' }).click();
    await own.getByRole('dialog').getByRole('button', { name: 'Cancel' }).click();
    expect((await t.ctx.pool.query('SELECT 1 FROM walgate.mfa_factors WHERE id = $1', [factorId])).rowCount).to.equal(1);
    await own.getByRole('button', { name: 'Remove factor phone' }).click();
    await own.getByRole('dialog').getByRole('button', { name: 'Remove factor' }).click();
    await own.getByText('Factor removed.').waitFor();
    await own.getByText('No second factor.').waitFor();
    expect((await t.ctx.pool.query('SELECT 1 FROM walgate.mfa_factors WHERE id = $1', [factorId])).rowCount).to.equal(0);
    // The next login gives tokens again, without a second step.
    expect((await http.post('/auth/login', { email: grace.email, password: grace.password })).body).to.have.property('accessToken');
    const trail = await http.get(`/api/rest/_users/${grace.userId}/events?type=user.mfa_factor_removed`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(trail.body.events).to.have.length(1);
    await own.close();
    expect(problems).to.deep.equal([]);
  });
});
