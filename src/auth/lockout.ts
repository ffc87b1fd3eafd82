import type { SecretBox } from '../core/crypto/secretbox.js';
import type { Pool, Queryable } from '../core/db/pool.js';

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

/**
 * Counts the attempt as a failure *before* the password is checked, and refuses it if the client
 * or the account is locked. Both rows are locked for the decision (the upsert takes their row
 * locks, always the account row first), so of N concurrent attempts at most the threshold get to
 * check a password, and exactly one of them sets the lock. Counting first also means a crash
 * mid-check costs an attempt rather than forgetting one. A success undoes the count
 * (recordLoginSuccess); a failure needs no second write. The steps run in Postgres, in one round
 * trip (sql/033): a login's time besides the hash is mostly round trips.
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
  const thresholds = clients.map((c) => (c === EVERY_CLIENT ? policy.threshold * ACCOUNT_FACTOR : policy.threshold));
  const { rows } = await pool.query<{ locked_until: Date | null; locked_here: Date | null }>({
    name: 'walgate_reserve_login_attempt', // prepared once per connection: every login runs it
    text: 'SELECT locked_until, locked_here FROM walgate.reserve_login_attempt($1, $2, $3, $4, $5)',
    values: [account, clients, now, thresholds, policy.lockoutSeconds],
  });
  const { locked_until: lockedUntil, locked_here: lockedHere } = rows[0]!;
  if (Math.random() < 0.01) await forgetIdleFailures(pool, now); // keeps the table small, off no one's path in particular
  return lockedUntil ? { allowed: false, lockedUntil } : { allowed: true, lockedHere };
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
