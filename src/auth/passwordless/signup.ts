import { randomBytes } from 'node:crypto';
import type { Queryable } from '../../core/db/pool.js';
import { hashPassword } from '../passwords.js';
import { USER_COLUMNS, type Scope, type User } from '../users.js';

/**
 * A user created by a passwordless request (where the environment allows sign-up that way):
 * unconfirmed until the code or link proves the mailbox, and without a password of their own —
 * the hash is of a random secret nobody learns; a password reset gives them one.
 */
export async function insertPasswordlessUser(db: Queryable, scope: Scope, email: string, now: Date): Promise<User | undefined> {
  const passwordHash = await hashPassword(randomBytes(32).toString('base64url'));
  const { rows } = await db.query<User>(
    `INSERT INTO walgate.users (project_id, environment, email, name, password_hash, has_password, created_at, updated_at)
     VALUES ($1, $2, $3, NULL, $4, false, $5, $5)
     ON CONFLICT (project_id, environment, email) DO NOTHING RETURNING ${USER_COLUMNS}`,
    [scope.projectId, scope.name, email, passwordHash, now],
  );
  return rows[0];
}
