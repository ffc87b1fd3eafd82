import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Config } from '../config.js';
import type { Logger } from '../log.js';

/**
 * KEY_ENCRYPTION_KEY when set (required in production). In development a key is generated once
 * into DATA_DIR, so `npm start` works with no set-up and a restart can still read its secrets.
 */
export async function loadKeyEncryptionKey(config: Config, log: Logger): Promise<Buffer> {
  if (config.keyEncryptionKey) return config.keyEncryptionKey;
  if (config.env === 'production') throw new Error('KEY_ENCRYPTION_KEY is required in production');
  const file = path.resolve(config.dataDir, 'key-encryption-key');
  const existing = await readFile(file, 'utf8').catch(() => undefined);
  if (existing) return Buffer.from(existing.trim(), 'base64');
  await mkdir(path.dirname(file), { recursive: true });
  const key = randomBytes(32);
  try {
    // 'wx': two processes starting together must not each write a different key.
    await writeFile(file, key.toString('base64') + '\n', { mode: 0o600, flag: 'wx' });
    log.warn({ file }, 'generated a development KEY_ENCRYPTION_KEY; set KEY_ENCRYPTION_KEY in production');
    return key;
  } catch {
    return Buffer.from((await readFile(file, 'utf8')).trim(), 'base64');
  }
}
