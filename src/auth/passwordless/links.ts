import { hashToken, randomToken } from '../../core/crypto/tokens.js';
import type { Queryable } from '../../core/db/pool.js';
import type { Scope } from '../users.js';

// walgate.magic_links (sql/065): a magic link's token is 256 random bits, stored only as a hash;
// one live link per user (a new one replaces it, so the table never holds more rows than users),
// taken — deleted — by exactly one request.

/** A fresh link token for the user, replacing any earlier one. */
export async function issueMagicLink(db: Queryable, userId: string, redirectTo: string, expiresAt: Date, now: Date): Promise<string> {
  const token = randomToken();
  await db.query(
    `INSERT INTO walgate.magic_links (user_id, token_hash, redirect_to, expires_at, created_at) VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (user_id) DO UPDATE SET token_hash = EXCLUDED.token_hash, redirect_to = EXCLUDED.redirect_to,
       expires_at = EXCLUDED.expires_at, created_at = EXCLUDED.created_at`,
    [userId, hashToken(token), redirectTo, expiresAt, now],
  );
  return token;
}

/**
 * Uses up a link of this environment: its user, or undefined (unknown, another environment's,
 * used, or expired — an expired one is deleted all the same).
 */
export async function takeMagicLink(db: Queryable, scope: Scope, token: string, now: Date): Promise<string | undefined> {
  const { rows } = await db.query<{ user_id: string; expires_at: Date }>(
    `DELETE FROM walgate.magic_links l USING walgate.users u
      WHERE l.token_hash = $1 AND u.id = l.user_id AND u.project_id = $2 AND u.environment = $3
      RETURNING l.user_id, l.expires_at`,
    [hashToken(token), scope.projectId, scope.name],
  );
  const link = rows[0];
  return link && link.expires_at > now ? link.user_id : undefined;
}
