import type { SecretBox } from '../crypto/secretbox.js';
import type { Queryable } from '../db/pool.js';
import type { Mail } from './mailer.js';

// walgate.mail_outbox: each e-mail is a row, written in the transaction of the code it carries,
// so a code exists exactly when its mail is on its way. The message is sealed (it holds the
// code) and dropped once sent. Retry times and leases are the database's clock (now()): every
// api process that sends reads the same one.

const SEAL_PURPOSE = 'mail';

export interface OutboxEntry {
  projectId: string;
  environment: string;
  userId: string | null;
  /** What the mail is for (signup, recovery, invite): shown to operators. */
  purpose: string;
  mail: Mail;
}

export async function enqueueMail(db: Queryable, secrets: SecretBox, entry: OutboxEntry, now: Date): Promise<void> {
  await db.query(
    `INSERT INTO walgate.mail_outbox (project_id, environment, user_id, purpose, recipient, message, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7)`,
    [
      entry.projectId,
      entry.environment,
      entry.userId,
      entry.purpose,
      entry.mail.to,
      secrets.seal(JSON.stringify(entry.mail), SEAL_PURPOSE),
      now,
    ],
  );
}

export interface ClaimedMail {
  id: string;
  attempts: number;
  mail: Mail;
}

/**
 * Takes up to `limit` due mails for this courier: each is leased (due again only after `leaseMs`)
 * in the statement that picks it, and SKIP LOCKED lets concurrent couriers take different ones.
 */
export async function claimDueMail(db: Queryable, secrets: SecretBox, limit: number, leaseMs: number): Promise<ClaimedMail[]> {
  const { rows } = await db.query<{ id: string; attempts: number; message: Buffer }>(
    `UPDATE walgate.mail_outbox m SET attempts = m.attempts + 1, next_attempt_at = now() + make_interval(secs => $2::float8 / 1000)
      WHERE m.id = ANY (ARRAY(
        SELECT id FROM walgate.mail_outbox WHERE state = 'queued' AND next_attempt_at <= now()
         ORDER BY next_attempt_at LIMIT $1 FOR UPDATE SKIP LOCKED))
      RETURNING m.id, m.attempts, m.message`,
    [limit, leaseMs],
  );
  return rows.map((r) => ({
    id: r.id,
    attempts: r.attempts,
    mail: JSON.parse(secrets.open(r.message, SEAL_PURPOSE).toString('utf8')) as Mail,
  }));
}

export async function markSent(db: Queryable, id: string): Promise<void> {
  await db.query(`UPDATE walgate.mail_outbox SET state = 'sent', sent_at = now(), message = NULL, last_error = NULL WHERE id = $1`, [id]);
}

/** A failed try: due again after `retryInMs`, or dead (its message dropped) when it was the last. */
export async function markFailed(db: Queryable, id: string, error: string, retryInMs: number | null): Promise<void> {
  await db.query(
    `UPDATE walgate.mail_outbox SET last_error = left($2, 500),
       state = CASE WHEN $3::float8 IS NULL THEN 'dead' ELSE 'queued' END,
       message = CASE WHEN $3::float8 IS NULL THEN NULL ELSE message END,
       next_attempt_at = CASE WHEN $3::float8 IS NULL THEN next_attempt_at ELSE now() + make_interval(secs => $3::float8 / 1000) END
      WHERE id = $1`,
    [id, error, retryInMs],
  );
}

/** Mails still to send (queued, due or not). */
export async function countQueuedMail(db: Queryable): Promise<number> {
  const { rows } = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM walgate.mail_outbox WHERE state = 'queued'`);
  return rows[0]!.n;
}
