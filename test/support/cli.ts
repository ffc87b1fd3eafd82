import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { TestApi } from './api.js';

const BIN = fileURLToPath(new URL('../../../bin/walgate.js', import.meta.url));

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the real `walgate` CLI in a child process against the test api's database; `input` is its standard input. */
export function walgate(t: TestApi, args: string[], env: Record<string, string> = {}, input?: string): Promise<CliResult> {
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      [BIN, ...args],
      {
        env: {
          ...process.env,
          DATABASE_URL: t.database.url,
          KEY_ENCRYPTION_KEY: t.config.keyEncryptionKey!.toString('base64'),
          DATA_DIR: t.config.dataDir,
          LOG_LEVEL: 'warn',
          // The same revocation store as the api under test (an empty value means unset).
          REDIS_URL: t.config.redisUrl ?? '',
          ...env,
        },
        timeout: 30_000,
      },
      (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
    if (input !== undefined) child.stdin?.end(input);
  });
}
