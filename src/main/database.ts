import { existsSync, readFileSync } from 'node:fs';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Config } from '../core/config.js';
import { hasEmbeddedCluster, startEmbeddedPostgres, type EmbeddedCluster } from '../core/db/embedded.js';
import type { Logger } from '../core/log.js';

export interface Database {
  url: string;
  /** The embedded cluster, when DATABASE_URL is unset. */
  embedded: EmbeddedCluster | undefined;
  /** Stops the embedded cluster if this process started it (or, as its owner, adopted it). */
  release(): Promise<void>;
}

export interface OpenOptions {
  /**
   * `npm start`: this process owns the embedded cluster under DATA_DIR. A cluster still running
   * there from a run that was killed (its owner gone) is adopted and stopped on exit like one this
   * process started; a second owner while the first lives is refused.
   */
  owner?: boolean;
  /** Start a new, empty cluster when DATA_DIR holds none (the CLI only does it when asked). */
  create?: boolean;
}

/** DATABASE_URL when set; otherwise the embedded cluster under DATA_DIR (started, or joined if running). */
export async function openDatabase(config: Config, log: Logger, options: OpenOptions = {}): Promise<Database> {
  if (config.databaseUrl) return { url: config.databaseUrl, embedded: undefined, release: async () => {} };
  if (options.create === false && !(await hasEmbeddedCluster(config.dataDir))) throw new NoDatabaseError(config.dataDir);
  const ownerFile = path.join(path.resolve(config.dataDir), 'owner.pid');
  if (options.owner) await claimOwnership(ownerFile);
  const embedded = await startEmbeddedPostgres({
    dir: config.dataDir,
    adopt: options.owner,
    log: (line) => log.debug({ postgres: line }, 'embedded postgres'),
  });
  if (options.owner && !embedded.owned)
    log.warn({ dataDir: path.resolve(config.dataDir) }, 'found the embedded database of an earlier run still running; stopping it on exit');
  return {
    url: embedded.url,
    embedded,
    release: async () => {
      await embedded.stop();
      if (options.owner) await rm(ownerFile, { force: true });
    },
  };
}

/** Neither DATABASE_URL nor a cluster under DATA_DIR: says where it looked and what to do. */
export class NoDatabaseError extends Error {
  override name = 'NoDatabaseError';
  constructor(dataDir: string) {
    super(
      [
        `no database: DATABASE_URL is unset and there is no embedded database under ${path.resolve(dataDir)} (DATA_DIR).`,
        'Point the CLI at the running service:',
        '  - next to `npm start`: run it from the same directory, or set DATA_DIR to that data directory;',
        '  - any other Postgres: set DATABASE_URL (and KEY_ENCRYPTION_KEY) as the daemons have them;',
        '  - Docker Compose: docker compose exec api node bin/walgate.js <command>.',
        'To create a new, empty embedded database there instead, add --create-database.',
      ].join('\n'),
    );
  }
}

/** Records this process as the owner; refuses while another live process owns the data directory. */
async function claimOwnership(file: string): Promise<void> {
  const previous = existsSync(file) ? Number(readFileSync(file, 'utf8').trim()) : undefined;
  if (previous && previous !== process.pid && isAlive(previous))
    throw new Error(`another walgate (pid ${previous}) runs on ${path.dirname(file)}; stop it, or set DATA_DIR to another directory`);
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, `${process.pid}\n`);
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
