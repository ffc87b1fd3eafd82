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

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The most questions one statement carries (more wait for the next). */
const MAX_BATCH = 500;

export class PostgresRevocationStore implements RevocationStore {
  /** The questions of this turn of the event loop, not yet sent. */
  #batch: Array<{ sessionId: string; resolve(revoked: boolean): void; reject(err: unknown): void }> | undefined;

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

  /**
   * Asked by every protected request. The questions asked during one turn of the event loop go to
   * Postgres together, as one statement (a batch is sent once the requests that arrived with it
   * have been read): under load one round trip answers many requests. Each answer is still as
   * fresh as a statement of its own — its statement starts after its request arrived.
   */
  isRevoked(sessionId: string): Promise<boolean> {
    return new Promise((resolve, reject) => {
      if (!this.#batch) {
        this.#batch = [];
        setImmediate(() => void this.#ask());
      }
      this.#batch.push({ sessionId, resolve, reject });
      if (this.#batch.length >= MAX_BATCH) void this.#ask();
    });
  }

  async #ask(): Promise<void> {
    const batch = this.#batch;
    this.#batch = undefined;
    if (!batch?.length) return;
    try {
      const { rows } = await pgUnavailableOnError(() =>
        // Named: every protected request asks, and a prepared statement skips the parse and plan.
        this.pool.query<{ session_id: string }>({
          name: 'walgate_are_revoked',
          text: 'SELECT session_id::text FROM walgate.revoked_sessions WHERE session_id = ANY ($1::uuid[]) AND expires_at > $2',
          // Only ids a session can have: one malformed id must not fail the others' statement.
          values: [[...new Set(batch.map((q) => q.sessionId).filter((id) => UUID.test(id)))], this.clock()],
        }),
      );
      const revoked = new Set(rows.map((r) => r.session_id));
      for (const q of batch) q.resolve(revoked.has(q.sessionId));
    } catch (err) {
      for (const q of batch) q.reject(err);
    }
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
