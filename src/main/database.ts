import type { Config } from '../core/config.js';
import { startEmbeddedPostgres, type EmbeddedCluster } from '../core/db/embedded.js';
import type { Logger } from '../core/log.js';

export interface Database {
  url: string;
  /** The embedded cluster, when DATABASE_URL is unset. */
  embedded: EmbeddedCluster | undefined;
  /** Stops the embedded cluster if this process started it. */
  release(): Promise<void>;
}

/** DATABASE_URL when set; otherwise the embedded cluster under DATA_DIR (started, or joined if running). */
export async function openDatabase(config: Config, log: Logger): Promise<Database> {
  if (config.databaseUrl) return { url: config.databaseUrl, embedded: undefined, release: async () => {} };
  const embedded = await startEmbeddedPostgres({
    dir: config.dataDir,
    log: (line) => log.debug({ postgres: line }, 'embedded postgres'),
  });
  return { url: embedded.url, embedded, release: () => embedded.stop() };
}
