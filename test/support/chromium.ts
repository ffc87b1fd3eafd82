import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

// Debian's Chromium driven by playwright-core (Playwright's own browser downloads are not used:
// this machine reaches no host but the package registries).

const EXECUTABLE = '/usr/bin/chromium';
const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/**
 * Installs Chromium when it is missing (CI runs as root on a clean machine). A test that needs it
 * fails, with the reason, rather than passing without having looked at the page.
 */
export function ensureChromium(): void {
  if (existsSync(EXECUTABLE)) return;
  try {
    execFileSync('sh', ['-c', 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium'], {
      stdio: 'pipe',
      timeout: 15 * 60_000,
    });
  } catch (err) {
    const e = err as { stderr?: Buffer; message: string };
    throw new Error(
      `Chromium is needed at ${EXECUTABLE} and could not be installed (apt-get install chromium): ${e.stderr?.toString().trim() || e.message}`,
      { cause: err },
    );
  }
  if (!existsSync(EXECUTABLE)) throw new Error(`apt-get install chromium succeeded but ${EXECUTABLE} is still missing`);
}

export async function launchChromium(): Promise<Browser> {
  ensureChromium();
  return chromium.launch({ executablePath: EXECUTABLE, args: ARGS, headless: true });
}
