import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { expect } from 'chai';
import type { Browser, Page } from 'playwright-core';
import { launchChromium } from '../support/chromium.js';

/**
 * Chromium on the console at `url`, signed in with a project's management token, on its
 * subscription list. Console errors and warnings and page errors go into `problems`, for the
 * test to assert on.
 */
export async function signedInConsole(
  url: string,
  token: string,
  problems: string[],
  projectId = 'shop',
): Promise<{ browser: Browser; page: Page }> {
  const browser = await launchChromium();
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  page.setDefaultTimeout(10_000);
  page.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warning') problems.push(`${m.type()}: ${m.text()} (${m.location().url})`);
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  await page.goto(`${url}/console`);
  await page.locator('#project-id').fill(projectId);
  await page.locator('#token').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Subscriptions' }).waitFor();
  return { browser, page };
}

const require = createRequire(import.meta.url);
let axeSource: Promise<string> | undefined;

/**
 * No serious or critical axe-core violation in the page as it stands. axe is evaluated by the
 * test tool, not loaded by a <script>: the console's CSP stays strict.
 */
export async function expectAccessible(page: Page, view: string): Promise<void> {
  axeSource ??= readFile(require.resolve('axe-core/axe.min.js'), 'utf8');
  if (!(await page.evaluate("'axe' in window"))) await page.evaluate(await axeSource);
  const violations = (await page.evaluate("axe.run(document, { resultTypes: ['violations'] }).then((r) => r.violations)")) as Array<{
    id: string;
    impact: string | null;
    nodes: Array<{ target: string[] }>;
  }>;
  const grave = violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  expect(
    grave.map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`),
    `accessibility violations in ${view}`,
  ).to.deep.equal([]);
}
