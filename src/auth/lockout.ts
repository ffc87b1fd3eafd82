import type { SecretBox } from '../core/crypto/secretbox.js';
import { withTransaction, type Pool, type Queryable } from '../core/db/pool.js';

// Failed logins, counted per account *and* client (sql/004). A client that fails `threshold`
// times in a row is locked out of that account for `lockoutSeconds`; the account is locked for
// every client only when all clients together fail ACCOUNT_FACTOR times as often. So a stranger
// cannot lock the owner out from one address, yet a guesser spread over many addresses still
// meets a limit. The account is keyed by an HMAC of the address, known or not: an unknown
// address is counted, locked and answered exactly like a registered one.

/** How many times more failures, from all clients together, lock the account for everyone. */
export const ACCOUNT_FACTOR = 10;

/** The `client` of the row that counts every client's failures on the account. */
const EVERY_CLIENT = '';

/** Rows idle this long and not locked are forgotten (they count as zero long before). */
const FORGET_AFTER_MS = 24 * 3600 * 1000;

export interface LockoutPolicy {
  /** Failures of one client that lock it out of the account. */
  threshold: number;
  lockoutSeconds: number;
}

/** A client that presented a valid device token: judged by its own failures only (sessions/devices.ts). */
export const deviceClient = (deviceId: string) => `device:${deviceId}`;

export type Reservation =
  /** The attempt may check the password. `lockedHere`: the lock this attempt set, should it fail. */
  { allowed: true; lockedHere: Date | null } | { allowed: false; lockedUntil: Date };

export function accountKey(secrets: SecretBox, scope: { projectId: string; name: string }, email: string): Buffer {
  return secrets.mac(`login:${scope.projectId}\0${scope.name}\0${email}`);
}

interface Row {
  client: string;
  failures: number;
  locked_until: Date | null;
  updated_at: Date;
}

/**
 * Counts the attempt as a failure *before* the password is checked, and refuses it if the client
 * or the account is locked. Both rows are locked for the decision (the upsert takes their row
 * locks, always the account row first), so of N concurrent attempts at most the threshold get to
 * check a password, and exactly one of them sets the lock. Counting first also means a crash
 * mid-check costs an attempt rather than forgetting one. A success undoes the count
 * (recordLoginSuccess); a failure needs no second write.
 */
export async function reserveLoginAttempt(
  pool: Pool,
  account: Buffer,
  client: string,
  policy: LockoutPolicy,
  now: Date,
  /** A known device: the account-wide count neither stops nor counts it. */
  knownDevice = false,
): Promise<Reservation> {
  client ||= 'unknown'; // never the account row's key
  const clients = knownDevice ? [client] : [EVERY_CLIENT, client];
  const reservation = await withTransaction(pool, async (c): Promise<Reservation> => {
    const { rows } = await c.query<Row>(
      `INSERT INTO walgate.login_failures AS f (account, client, failures, updated_at) SELECT $1, unnest($2::text[]), 0, $3
       ON CONFLICT (account, client) DO UPDATE SET failures = f.failures
       RETURNING client, failures, locked_until, updated_at`,
      [account, clients, now],
    );
    const locks = rows.map((r) => r.locked_until).filter((d): d is Date => d !== null && d > now);
    if (locks.length) return { allowed: false, lockedUntil: new Date(Math.max(...locks.map((d) => d.getTime()))) };
    const lockUntil = new Date(now.getTime() + policy.lockoutSeconds * 1000);
    const idleSince = now.getTime() - policy.lockoutSeconds * 1000;
    let lockedHere: Date | null = null;
    const next = rows.map((r) => {
      const threshold = r.client === EVERY_CLIENT ? policy.threshold * ACCOUNT_FACTOR : policy.threshold;
      // Failures older than a lockout period are forgotten: a typo last week counts for nothing.
      const failures = (r.updated_at.getTime() <= idleSince ? 0 : r.failures) + 1;
      if (failures < threshold) return { client: r.client, failures, lockedUntil: null };
      lockedHere = lockUntil;
      return { client: r.client, failures: 0, lockedUntil: lockUntil };
    });
    await c.query(
      `UPDATE walgate.login_failures f SET failures = v.failures, locked_until = v.locked_until, updated_at = $2
         FROM unnest($3::text[], $4::int[], $5::timestamptz[]) AS v (client, failures, locked_until)
        WHERE f.account = $1 AND f.client = v.client`,
      [account, now, next.map((n) => n.client), next.map((n) => n.failures), next.map((n) => n.lockedUntil)],
    );
    return { allowed: true, lockedHere };
  });
  if (Math.random() < 0.01) await forgetIdleFailures(pool, now); // keeps the table small, off no one's path in particular
  return reservation;
}

/**
 * The password was right: this client's and the account's counts start again. A lock is lifted
 * only if this very attempt set it — a lock that concurrent wrong passwords set stays.
 */
export async function recordLoginSuccess(
  db: Queryable,
  account: Buffer,
  client: string,
  lockedHere: Date | null,
  now: Date,
): Promise<void> {
  client ||= 'unknown';
  await db.query(
    `UPDATE walgate.login_failures SET failures = 0, updated_at = $4,
       locked_until = CASE WHEN locked_until = $3 THEN NULL ELSE locked_until END
     WHERE account = $1 AND client IN ($2, '')`,
    [account, client, lockedHere, now],
  );
}

/** A password reset ends every lockout of the account, for every client. */
export async function clearLoginFailures(db: Queryable, account: Buffer): Promise<void> {
  await db.query('DELETE FROM walgate.login_failures WHERE account = $1', [account]);
}

async function forgetIdleFailures(db: Queryable, now: Date): Promise<void> {
  await db.query(
    `DELETE FROM walgate.login_failures WHERE ctid = ANY (ARRAY (
       SELECT ctid FROM walgate.login_failures WHERE updated_at < $1 AND (locked_until IS NULL OR locked_until <= $2) LIMIT 500))`,
    [new Date(now.getTime() - FORGET_AFTER_MS), now],
  );
}
