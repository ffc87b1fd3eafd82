import pg from 'pg';

export type Pool = pg.Pool;
export type PoolClient = pg.PoolClient;
export type Queryable = Pick<pg.Pool, 'query'> | pg.PoolClient;

export interface PoolOptions {
  max?: number;
  applicationName?: string;
  /** Startup settings of every connection (`-c name=value …`). */
  options?: string;
}

/**
 * A pool that fails fast: a request should get a 503 when Postgres is away, not hang until the
 * client gives up. Idle clients that die (server restart) are dropped by pg itself; the 'error'
 * listener keeps such a death from crashing the process.
 */
export function createPool(connectionString: string, options: PoolOptions = {}): Pool {
  const pool = new pg.Pool({
    connectionString,
    max: options.max ?? 10,
    connectionTimeoutMillis: 5000,
    idleTimeoutMillis: 30000,
    application_name: options.applicationName ?? 'walgate',
    options: options.options,
    // Keeps a stalled statement from pinning a pooled connection (and a request) forever.
    query_timeout: 30000,
  });
  pool.on('error', () => {
    /* an idle client lost its connection; the pool replaces it on next use */
  });
  return pool;
}

/**
 * Runs fn with a client checked out of the pool; the client goes back even when fn throws —
 * unless its connection failed, or fn called `discard` (its session can no longer be trusted).
 */
export async function withClient<T>(pool: Pool, fn: (client: PoolClient, discard: (why: Error) => void) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  // A checked-out client whose connection dies emits 'error' (besides failing its query); the
  // pool only listens on idle clients, and an unheard 'error' would take the process down.
  const onError = (err: Error) => (broken = err);
  client.on('error', onError);
  try {
    return await fn(client, onError);
  } catch (err) {
    if (isConnectionError(err)) broken = err as Error;
    throw err;
  } finally {
    client.off('error', onError);
    // A client whose connection failed must not go back into the pool for the next request.
    client.release(broken);
  }
}

/** Runs fn inside BEGIN/COMMIT; any throw rolls back. */
export async function withTransaction<T>(pool: Pool, fn: (client: PoolClient) => Promise<T>): Promise<T> {
  return withClient(pool, async (client) => {
    await client.query('BEGIN');
    try {
      const result = await fn(client);
      await client.query('COMMIT');
      return result;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    }
  });
}

// SQLSTATE codes we branch on. Never match on message text.
export const PgCode = {
  uniqueViolation: '23505',
  foreignKeyViolation: '23503',
  serializationFailure: '40001',
  deadlockDetected: '40P01',
  lockNotAvailable: '55P03',
  objectInUse: '55006',
  undefinedTable: '42P01',
  undefinedObject: '42704',
  duplicateObject: '42710',
  insufficientPrivilege: '42501',
  wrongObjectType: '42809',
  invalidTextRepresentation: '22P02',
  characterNotInRepertoire: '22021',
  untranslatableCharacter: '22P05',
  objectNotInPrerequisiteState: '55000',
  duplicateDatabase: '42P04',
} as const;

export function pgCode(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/**
 * True when the error means "the database is not reachable right now" rather than "this query is
 * wrong": the caller should answer 503 and retry later.
 */
export function isConnectionError(err: unknown): boolean {
  const code = pgCode(err);
  if (code) {
    // 08xxx connection exceptions, 57P01..57P03 admin/crash shutdown and "cannot connect now",
    // 53300 too many connections.
    if (code.startsWith('08') || code === '57P01' || code === '57P02' || code === '57P03' || code === '53300') {
      return true;
    }
    if (['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'ENOTFOUND', 'EHOSTUNREACH', 'EAI_AGAIN'].includes(code)) {
      return true;
    }
  }
  const message = (err as { message?: unknown } | null)?.message;
  // node-postgres reports these without a code; there is no other way to recognise them.
  return (
    typeof message === 'string' &&
    (message.includes('Connection terminated') ||
      message.includes('timeout exceeded when trying to connect') ||
      message.includes('Query read timeout') ||
      message.includes('Client has encountered a connection error'))
  );
}
