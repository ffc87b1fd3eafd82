import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, symlinkSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

// What the docs tests need to run a page's shell blocks as a reader would: a fresh directory that
// looks like the checkout, `npm start` (its compiled entry) in it, and one POSIX shell session in
// which block after block runs, its variables and functions kept from one block to the next.

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const DEV = path.join(ROOT, 'dist/src/main/dev.js');

/** The environment of a newcomer's shell: nothing of the test suite's database, Redis or mail. */
export function cleanEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, LOG_LEVEL: 'warn' };
  for (const name of [
    'DATABASE_URL',
    'TEST_DATABASE_URL',
    'REDIS_URL',
    'SMTP_URL',
    'DATA_DIR',
    'KEY_ENCRYPTION_KEY',
    'PORT',
    'TAILER_PORT',
  ])
    delete env[name];
  return env;
}

export async function until<T>(what: string, probe: () => T | undefined, timeoutMs = 60_000): Promise<T> {
  for (const end = Date.now() + timeoutMs; Date.now() < end; await new Promise((r) => setTimeout(r, 100))) {
    const value = probe();
    if (value !== undefined) return value;
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** A fresh directory with the checkout's package.json, node_modules, bin and dist linked in. */
export async function checkoutLikeDirectory(prefix: string): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), prefix));
  chmodSync(dir, 0o755); // under root the embedded Postgres runs as another user, which must reach .data
  for (const entry of ['package.json', 'node_modules', 'bin', 'dist']) symlinkSync(path.join(ROOT, entry), path.join(dir, entry));
  return dir;
}

export interface Background {
  child: ChildProcess;
  output: () => string;
}

/** A long-running command, with its output collected. */
export function background(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv): Background {
  const child = spawn(command, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (d: Buffer) => (output += d));
  child.stderr!.on('data', (d: Buffer) => (output += d));
  return { child, output: () => output };
}

export async function stop(p: { child: ChildProcess } | undefined): Promise<void> {
  if (!p || p.child.exitCode !== null || p.child.signalCode !== null) return;
  const exited = new Promise((r) => p.child.once('exit', r));
  p.child.kill('SIGINT');
  await exited;
}

export interface Service extends Background {
  /** The banner's lines: the "postgres:" URL, and the demo project's token on a first start. */
  postgresUrl: string;
  managementToken: string | undefined;
}

/** `npm start` (its compiled entry) in `dir`, waited for until it prints "walgate ready". */
export async function startService(dir: string, env: NodeJS.ProcessEnv): Promise<Service> {
  const service = background(process.execPath, [DEV], dir, env);
  const banner = await until('walgate ready', () => {
    if (service.child.exitCode !== null) throw new Error(`npm start exited:\n${service.output()}`);
    return service.output().includes('walgate ready') ? service.output() : undefined;
  });
  return {
    ...service,
    postgresUrl: /postgres: (postgres:\/\/\S+)/.exec(banner)![1]!,
    managementToken: /^\s+(wgm_\S+)$/m.exec(banner)?.[1],
  };
}

/** One `sh` session (dash here: a POSIX shell), as in a terminal. */
export class ShellSession {
  readonly child: ChildProcess;
  #out = '';
  #marker = 0;

  constructor(cwd: string, env: NodeJS.ProcessEnv) {
    this.child = spawn('sh', [], { cwd, env, stdio: ['pipe', 'pipe', 'pipe'] });
    this.child.stdout!.on('data', (d: Buffer) => (this.#out += d));
    this.child.stderr!.on('data', (d: Buffer) => (this.#out += d));
    // One stream, in the order written: across two pipes a command's stderr may be read after the
    // end marker that follows it on stdout, and fall outside its block's output.
    this.child.stdin!.write('exec 2>&1\n');
  }

  /** Runs a script in the session: its output, and the status of its last command. */
  async run(script: string, timeoutMs?: number): Promise<{ output: string; status: number }> {
    const done = `__block_${++this.#marker}__`;
    const from = this.#out.length;
    this.child.stdin!.write(`${script}\necho "${done} $?"\n`);
    const status = await until(
      `the block ${script.slice(0, 60)}`,
      () => {
        const m = new RegExp(`${done} (\\d+)`).exec(this.#out.slice(from));
        return m ? Number(m[1]) : undefined;
      },
      timeoutMs,
    );
    return { output: this.#out.slice(from, this.#out.indexOf(done, from)), status };
  }

  close(): void {
    this.child.kill();
  }
}
