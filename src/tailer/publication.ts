import { PgCode, pgCode, type Queryable } from '../core/db/pool.js';
import { qualified } from '../core/db/identifiers.js';

export const PUBLICATION = 'walgate';

/** How long watching a table waits for the transactions that use it. */
const WATCH_LOCK_TIMEOUT = '2s';

export class WatchError extends Error {
  override name = 'WatchError';
  constructor(
    message: string,
    readonly reason: 'not_a_table' | 'forbidden' | 'busy',
  ) {
    super(message);
  }
}

/**
 * Serialises publication changes until the caller's transaction ends. Whoever decides from the
 * subscriptions whether a table stays watched takes it before reading them: a subscription being
 * created on that table commits first and is seen, instead of having its table dropped under it.
 */
export async function lockPublication(db: Queryable): Promise<void> {
  await db.query(`SELECT pg_advisory_xact_lock(hashtext('walgate-publication'))`);
}

/** The publication exists (created by migrations 002 and 027; recreated here if someone dropped it). */
export async function ensurePublication(db: Queryable): Promise<void> {
  const { rowCount } = await db.query('SELECT 1 FROM pg_publication WHERE pubname = $1', [PUBLICATION]);
  if (!rowCount) {
    // The audit trail is always published (subscriptions on `_auth_events`, tailer/auth-events.ts).
    await db.query(`CREATE PUBLICATION ${PUBLICATION} FOR TABLE walgate.webhooks, walgate.auth_events`).catch((err: unknown) => {
      if (pgCode(err) !== PgCode.duplicateObject) throw err;
    });
  }
}

/**
 * Makes the tailer see changes of `schema.table`: the table joins the publication, and gets
 * REPLICA IDENTITY FULL so UPDATE and DELETE carry the whole old row. Run it in the transaction
 * that creates the subscription: both take effect at the same commit, or neither does.
 */
export async function watchTable(db: Queryable, schema: string, table: string): Promise<void> {
  await lockPublication(db);
  const { rows } = await db.query<{ relkind: string; relreplident: string; published: boolean }>(
    `SELECT c.relkind, c.relreplident,
            EXISTS (SELECT 1 FROM pg_publication_tables p WHERE p.pubname = $3 AND p.schemaname = n.nspname AND p.tablename = c.relname) AS published
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = $1 AND c.relname = $2`,
    [schema, table, PUBLICATION],
  );
  const rel = rows[0];
  // Partitioned tables ('p') publish through their partitions; plain tables ('r') directly.
  if (!rel || (rel.relkind !== 'r' && rel.relkind !== 'p')) {
    throw new WatchError(`${schema}.${table} is not a table`, 'not_a_table');
  }
  try {
    // Altering a table waits for every transaction using it; a long one must not hold the
    // request (and the subscription lock) hostage: give up, and let the client retry.
    await db.query(`SET LOCAL lock_timeout = '${WATCH_LOCK_TIMEOUT}'`);
    if (rel.relreplident !== 'f') await db.query(`ALTER TABLE ${qualified(schema, table)} REPLICA IDENTITY FULL`);
    if (!rel.published) await db.query(`ALTER PUBLICATION ${PUBLICATION} ADD TABLE ${qualified(schema, table)}`);
  } catch (err) {
    if (pgCode(err) === PgCode.insufficientPrivilege) {
      throw new WatchError(`walgate's database role may not alter ${schema}.${table} (it must own the table)`, 'forbidden');
    }
    if (pgCode(err) === PgCode.lockNotAvailable) {
      throw new WatchError(`${schema}.${table} is locked by a long transaction; retry in a moment`, 'busy');
    }
    throw err;
  }
}

/** Takes the table out of the publication (when no subscription names it any more). */
export async function unwatchTable(db: Queryable, schema: string, table: string): Promise<void> {
  await lockPublication(db);
  const { rowCount } = await db.query('SELECT 1 FROM pg_publication_tables WHERE pubname = $1 AND schemaname = $2 AND tablename = $3', [
    PUBLICATION,
    schema,
    table,
  ]);
  if (!rowCount) return;
  try {
    // Dropping a table from the publication waits for whoever holds it in SHARE UPDATE EXCLUSIVE
    // mode or stronger (CREATE INDEX, VACUUM, ANALYZE, LOCK TABLE): as when watching, give up
    // rather than hold the request and the subscription's row lock.
    await db.query(`SET LOCAL lock_timeout = '${WATCH_LOCK_TIMEOUT}'`);
    await db.query(`ALTER PUBLICATION ${PUBLICATION} DROP TABLE ${qualified(schema, table)}`);
  } catch (err) {
    if (pgCode(err) === PgCode.lockNotAvailable) {
      throw new WatchError(`${schema}.${table} is locked by another session; retry in a moment`, 'busy');
    }
    throw err;
  }
}
