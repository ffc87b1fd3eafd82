import type { Redis } from 'ioredis';
import type { Clock } from '../clock.js';
import { isConnectionError, type Pool } from '../db/pool.js';
import { StoreUnavailableError } from './unavailable.js';

/**
 * The revocation list: sessions (`sid`) whose access tokens must be refused although their
 * signatures are valid. An entry only needs to live as long as the longest access token of that
 * session, so every entry carries its expiry. Every protected request asks once.
 */
export interface RevocationStore {
  revoke(sessionId: string, until: Date): Promise<void>;
  isRevoked(sessionId: string): Promise<boolean>;
}

export class RedisRevocationStore implements RevocationStore {
  constructor(
    private readonly redis: Redis,
    private readonly clock: Clock,
    private readonly prefix = 'walgate:revoked:',
  ) {}

  async revoke(sessionId: string, until: Date): Promise<void> {
    const ttlMs = Math.max(1000, until.getTime() - this.clock().getTime());
    await unavailableOnError(() => this.redis.set(this.prefix + sessionId, '1', 'PX', ttlMs));
  }

  async isRevoked(sessionId: string): Promise<boolean> {
    return (await unavailableOnError(() => this.redis.exists(this.prefix + sessionId))) === 1;
  }
}

export class PostgresRevocationStore implements RevocationStore {
  constructor(
    private readonly pool: Pool,
    private readonly clock: Clock,
  ) {}

  async revoke(sessionId: string, until: Date): Promise<void> {
    await pgUnavailableOnError(() =>
      this.pool.query(
        `INSERT INTO walgate.revoked_sessions (session_id, expires_at) VALUES ($1, $2)
         ON CONFLICT (session_id) DO UPDATE SET expires_at = greatest(revoked_sessions.expires_at, EXCLUDED.expires_at)`,
        [sessionId, until],
      ),
    );
  }

  async isRevoked(sessionId: string): Promise<boolean> {
    const { rowCount } = await pgUnavailableOnError(() =>
      // Named: every protected request asks, and a prepared statement skips the parse and plan.
      this.pool.query({
        name: 'walgate_is_revoked',
        text: 'SELECT 1 FROM walgate.revoked_sessions WHERE session_id = $1 AND expires_at > $2',
        values: [sessionId, this.clock()],
      }),
    );
    return (rowCount ?? 0) > 0;
  }

  /** Expired entries are dead weight; the api sweeps them now and then. */
  async sweep(): Promise<number> {
    const { rowCount } = await this.pool.query('DELETE FROM walgate.revoked_sessions WHERE expires_at <= $1', [this.clock()]);
    return rowCount ?? 0;
  }
}

async function unavailableOnError<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw new StoreUnavailableError(`revocation list unavailable: ${(err as Error).message}`, { cause: err });
  }
}

async function pgUnavailableOnError<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (isConnectionError(err)) {
      throw new StoreUnavailableError(`revocation list unavailable: ${(err as Error).message}`, { cause: err });
    }
    throw err;
  }
}
