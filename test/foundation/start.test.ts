import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { freePort } from '../../src/core/db/embedded.js';

const DEV = fileURLToPath(new URL('../../src/main/dev.js', import.meta.url));

interface Run {
  output: string;
  code: number | null;
}

/** `npm start` as a newcomer runs it: no DATABASE_URL, a data directory of its own; stopped with Ctrl-C (or killed). */
async function startAndStop(
  dataDir: string,
  port: number,
  tailerPort: number,
  whileRunning: (banner: string) => Promise<void>,
  signal: NodeJS.Signals = 'SIGINT',
): Promise<Run> {
  const child = spawn(process.execPath, [DEV], { env: startEnv(dataDir, port, tailerPort), stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (d: Buffer) => (output += d));
  child.stderr.on('data', (d: Buffer) => (output += d));
  const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
  const until = Date.now() + 60_000;
  while (!output.includes('walgate ready')) {
    if (Date.now() > until || child.exitCode !== null) throw new Error(`no "walgate ready":\n${output}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  await whileRunning(output);
  child.kill(signal);
  return { output, code: await exited };
}

function startEnv(dataDir: string, port: number, tailerPort: number): NodeJS.ProcessEnv {
  const env = {
    ...process.env,
    DATA_DIR: dataDir,
    PORT: String(port),
    TAILER_PORT: String(tailerPort),
    LOG_LEVEL: 'warn',
  } as NodeJS.ProcessEnv;
  delete env.DATABASE_URL;
  delete env.REDIS_URL;
  delete env.SMTP_URL;
  return env;
}

describe('npm start (embedded Postgres)', function () {
  this.timeout(120_000);
  let dataDir: string;
  before(async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), 'walgate-start-'));
  });
  after(() => rm(dataDir, { recursive: true, force: true }));

  it('boots, prints the api and Postgres URLs, the mailbox and a demo token, serves, stops cleanly on Ctrl-C, and reuses its data', async () => {
    const port = await freePort();
    const tailerPort = await freePort();
    const first = await startAndStop(dataDir, port, tailerPort, async () => {
      const ready = await fetch(`http://127.0.0.1:${tailerPort}/readyz`);
      expect(ready.status).to.equal(200);
      const signup = await fetch(`http://127.0.0.1:${port}/auth/signup`, {
        method: 'POST',
        headers: { 'x-project-id': 'demo', 'content-type': 'application/json' },
        body: JSON.stringify({ email: 'newcomer@example.com', password: 'correct horse battery staple' }),
      });
      expect(signup.status).to.equal(201);
      // The dev mailbox: the e-mail is a file, with the code in the subject. It leaves through the
      // mail queue after the answer, so it may take a moment.
      const mailDir = path.join(dataDir, 'mail');
      for (let i = 0; i < 100 && !(await readdir(mailDir).catch(() => [])).length; i++) await new Promise((r) => setTimeout(r, 50));
      const files = await readdir(mailDir);
      expect(files).to.have.length(1);
      expect(await readFile(path.join(dataDir, 'mail', files[0]!), 'utf8')).to.match(/Subject: Your confirmation code: \d{6}/);
    });
    expect(first.code).to.equal(0);
    expect(first.output).to.contain(`api:      http://127.0.0.1:${port}`);
    expect(first.output).to.match(/postgres: postgres:\/\/walgate:[^@]+@127\.0\.0\.1:\d+\/walgate \(embedded/);
    expect(first.output).to.contain(`e-mail:   dev mailbox ${path.join(dataDir, 'mail')}`);
    expect(first.output).to.contain(`tailer:   http://127.0.0.1:${tailerPort} (health and metrics)`);
    const token = /shown only once:\n\s+(wgm_\S+)/.exec(first.output)?.[1];
    expect(token).to.match(/^wgm_/);

    const second = await startAndStop(dataDir, port, tailerPort, async () => {
      // The data survived: the same account exists, and the demo token still works.
      const again = await fetch(`http://127.0.0.1:${port}/auth/signup`, {
        method: 'POST',
        headers: { 'x-project-id': 'demo', 'content-type': 'application/json' },
        body: JSON.stringify({ email: 'newcomer@example.com', password: 'correct horse battery staple' }),
      });
      expect(again.status).to.equal(409);
      const list = await fetch(`http://127.0.0.1:${port}/api/rest/_webhooks`, {
        headers: { authorization: `Bearer ${token}`, 'x-project-id': 'demo', environment: 'master' },
      });
      expect(list.status).to.equal(200);
    });
    expect(second.code).to.equal(0);
    expect(second.output).not.to.contain('shown only once');
    // Ctrl-C stopped the cluster too: its pid file is gone.
    const pidFile = await readFile(path.join(dataDir, 'pg', 'postmaster.pid')).then(
      () => 'present',
      () => 'gone',
    );
    expect(pidFile).to.equal('gone');
  });

  it('owns its database: after a SIGKILL the next start adopts the cluster left running and stops it on exit', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'walgate-orphan-'));
    try {
      const [port, tailerPort] = [await freePort(), await freePort()];
      let postmaster = 0;
      const killed = await startAndStop(
        dir,
        port,
        tailerPort,
        async () => {
          postmaster = Number((await readFile(path.join(dir, 'pg', 'postmaster.pid'), 'utf8')).split('\n')[0]);
        },
        'SIGKILL',
      );
      expect(killed.code).to.equal(null);
      // A killed walgate cannot stop its cluster: it is still running, serving nobody.
      expect(isAlive(postmaster), 'the cluster outlived the killed run').to.equal(true);
      expect(postgresProcessesOf(dir)).to.not.deep.equal([]);

      const next = await startAndStop(dir, port, tailerPort, async () => {
        const me = await fetch(`http://127.0.0.1:${port}/healthz`);
        expect(me.status).to.equal(200);
      });
      expect(next.code).to.equal(0);
      expect(next.output).to.contain('found the embedded database of an earlier run still running');
      for (let i = 0; i < 100 && isAlive(postmaster); i++) await new Promise((r) => setTimeout(r, 50));
      expect(isAlive(postmaster), 'the leftover cluster is stopped').to.equal(false);
      expect(postgresProcessesOf(dir), 'no Postgres process of the data directory').to.deep.equal([]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('leaves no Postgres behind when its port is taken, and says which setting to change', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'walgate-port-taken-'));
    const taken = createServer();
    try {
      const port = await new Promise<number>((resolve) =>
        taken.listen(0, '127.0.0.1', () => resolve((taken.address() as AddressInfo).port)),
      );
      const run = await startExpectingExit(dir, port, await freePort());
      expect(run.code).to.equal(1);
      expect(run.output).to.contain(`127.0.0.1:${port} is already in use`);
      expect(run.output).to.contain('set PORT to a free port');
      // The cluster had started (initdb ran) before the port was tried: it was stopped again.
      expect(existsSync(path.join(dir, 'pg', 'PG_VERSION')), 'the cluster was created').to.equal(true);
      expect(postgresProcessesOf(dir), 'no Postgres process of the data directory').to.deep.equal([]);
    } finally {
      taken.close();
      await rm(dir, { recursive: true, force: true });
    }
  });

  for (const signals of [1, 2])
    it(`leaves no Postgres behind when Ctrl-C${signals === 2 ? ' twice (no drain)' : ''} comes while it starts`, async () => {
      const dir = await mkdtemp(path.join(tmpdir(), 'walgate-interrupted-'));
      try {
        const child = spawn(process.execPath, [DEV], { env: startEnv(dir, await freePort(), await freePort()), stdio: 'ignore' });
        const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
        // The cluster is up (its pid file written) and the start goes on: migrations, listeners.
        const pidFile = path.join(dir, 'pg', 'postmaster.pid');
        for (const until = Date.now() + 60_000; !existsSync(pidFile) && child.exitCode === null && Date.now() < until;)
          await new Promise((r) => setTimeout(r, 20));
        expect(existsSync(pidFile), 'the cluster started').to.equal(true);
        for (let i = 0; i < signals; i++) child.kill('SIGINT');
        expect(await exited).to.be.oneOf([0, 130]);
        expect(postgresProcessesOf(dir), 'no Postgres process of the data directory').to.deep.equal([]);
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    });
});

/** `npm start` that is expected to give up on its own: its exit code and everything it printed. */
async function startExpectingExit(dataDir: string, port: number, tailerPort: number): Promise<Run> {
  const child = spawn(process.execPath, [DEV], { env: startEnv(dataDir, port, tailerPort), stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (d: Buffer) => (output += d));
  child.stderr.on('data', (d: Buffer) => (output += d));
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  return { output, code };
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Pids of running processes whose command line names the data directory (the postmaster: `-D <dir>/pg`). */
function postgresProcessesOf(dir: string): number[] {
  return readdirSync('/proc')
    .filter((p) => /^\d+$/.test(p))
    .filter((p) => {
      try {
        return readFileSync(`/proc/${p}/cmdline`, 'utf8').includes(path.join(dir, 'pg'));
      } catch {
        return false;
      }
    })
    .map(Number);
}
