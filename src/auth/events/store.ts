import { selectList } from '../../core/db/columns.js';
import type { Queryable } from '../../core/db/pool.js';

// Reading the audit trail: newest first, by environment or by user, in cursor pages.

export interface AuthEventView {
  id: string;
  type: string;
  userId: string | null;
  sessionId: string | null;
  actor: string | null;
  clientAddress: string | null;
  userAgent: string | null;
  details: Record<string, unknown>;
  createdAt: Date;
  seq: string;
}

const COLUMNS = selectList<AuthEventView>({
  id: 'id',
  type: 'type',
  userId: 'user_id',
  sessionId: 'session_id',
  actor: 'actor',
  clientAddress: 'client_address',
  userAgent: 'user_agent',
  details: 'details',
  createdAt: 'created_at',
  seq: 'seq',
});

export interface EventQuery {
  userId?: string;
  type?: string;
  since?: Date;
  until?: Date;
  /** The `seq` of the last event of the previous page (events sort by seq, the order of appends). */
  cursor?: string;
  limit: number;
}

export async function listAuthEvents(db: Queryable, env: { projectId: string; name: string }, q: EventQuery): Promise<AuthEventView[]> {
  const { rows } = await db.query<AuthEventView>(
    `SELECT ${COLUMNS} FROM walgate.auth_events
      WHERE project_id = $1 AND environment = $2
        AND ($3::uuid IS NULL OR user_id = $3) AND ($4::text IS NULL OR type = $4)
        AND ($5::timestamptz IS NULL OR created_at >= $5) AND ($6::timestamptz IS NULL OR created_at < $6)
        AND ($7::bigint IS NULL OR seq < $7)
      ORDER BY seq DESC LIMIT $8`,
    [env.projectId, env.name, q.userId ?? null, q.type ?? null, q.since ?? null, q.until ?? null, q.cursor ?? null, q.limit],
  );
  return rows;
}

/** Whether the environment's trail holds any event of this user (deleted users' included). */
export async function hasAuthEvents(db: Queryable, env: { projectId: string; name: string }, userId: string): Promise<boolean> {
  const { rowCount } = await db.query(
    'SELECT 1 FROM walgate.auth_events WHERE project_id = $1 AND environment = $2 AND user_id = $3 LIMIT 1',
    [env.projectId, env.name, userId],
  );
  return (rowCount ?? 0) > 0;
}
