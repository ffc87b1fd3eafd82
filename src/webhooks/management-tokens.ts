import { hashToken, randomId, randomToken } from '../core/crypto/tokens.js';
import type { Queryable } from '../core/db/pool.js';

// Management API tokens: `wgm_` + 256 random bits, shown once, stored as SHA-256, scoped to one
// project, revocable. The id (`mt_…`) names a token in lists and in `token revoke`.

export const MANAGEMENT_TOKEN_PREFIX = 'wgm_';

export interface ManagementToken {
  id: string;
  projectId: string;
  name: string | null;
  createdAt: Date;
  lastUsedAt: Date | null;
  revokedAt: Date | null;
}

function fromRow(r: Record<string, unknown>): ManagementToken {
  return {
    id: r.id as string,
    projectId: r.project_id as string,
    name: (r.name as string | null) ?? null,
    createdAt: r.created_at as Date,
    lastUsedAt: (r.last_used_at as Date | null) ?? null,
    revokedAt: (r.revoked_at as Date | null) ?? null,
  };
}

export async function createManagementToken(
  db: Queryable,
  projectId: string,
  name?: string,
): Promise<{ token: string; record: ManagementToken }> {
  const token = randomToken(MANAGEMENT_TOKEN_PREFIX);
  const { rows } = await db.query(
    `INSERT INTO walgate.management_tokens (id, project_id, name, token_hash) VALUES ($1, $2, $3, $4)
     RETURNING id, project_id, name, created_at, last_used_at, revoked_at`,
    [randomId('mt_'), projectId, name ?? null, hashToken(token)],
  );
  return { token, record: fromRow(rows[0]!) };
}

export async function listManagementTokens(db: Queryable, projectId: string): Promise<ManagementToken[]> {
  const { rows } = await db.query(
    `SELECT id, project_id, name, created_at, last_used_at, revoked_at FROM walgate.management_tokens
     WHERE project_id = $1 ORDER BY created_at, id`,
    [projectId],
  );
  return rows.map(fromRow);
}

/** Returns false when there is no such live token. */
export async function revokeManagementToken(db: Queryable, id: string, at: Date): Promise<boolean> {
  const { rowCount } = await db.query('UPDATE walgate.management_tokens SET revoked_at = $2 WHERE id = $1 AND revoked_at IS NULL', [
    id,
    at,
  ]);
  return (rowCount ?? 0) > 0;
}

/**
 * The live token with this value, if any. The lookup is by hash, so the comparison is on a digest
 * the caller cannot choose byte by byte; last_used_at is refreshed at most once a minute per token
 * so the hot path stays a single read.
 */
export async function authenticateManagementToken(db: Queryable, token: string, at: Date): Promise<ManagementToken | undefined> {
  if (!token.startsWith(MANAGEMENT_TOKEN_PREFIX) || token.length > 200) return undefined;
  const { rows } = await db.query(
    `SELECT id, project_id, name, created_at, last_used_at, revoked_at FROM walgate.management_tokens
     WHERE token_hash = $1 AND revoked_at IS NULL`,
    [hashToken(token)],
  );
  const found = rows[0] ? fromRow(rows[0]) : undefined;
  if (found && (!found.lastUsedAt || at.getTime() - found.lastUsedAt.getTime() > 60_000)) {
    await db.query('UPDATE walgate.management_tokens SET last_used_at = $2 WHERE id = $1', [found.id, at]);
  }
  return found;
}
