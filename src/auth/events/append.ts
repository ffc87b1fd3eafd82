import type { Queryable } from '../../core/db/pool.js';
import type { AuthEventType } from './kinds.js';

/** Where a change came from: the client of an auth request, or an operator's management token. */
export interface EventOrigin {
  clientAddress?: string | null;
  userAgent?: string | null;
  /** The management token that acted (admin actions). */
  actor?: string | null;
}

export interface NewAuthEvent extends EventOrigin {
  type: AuthEventType;
  userId?: string | null;
  sessionId?: string | null;
  details?: Record<string, unknown>;
}

export const INSERT = `INSERT INTO walgate.auth_events (project_id, environment, type, user_id, session_id, actor, client_address, user_agent, details, created_at)`;

/**
 * Appends one audit row. `db` is the transaction of the change it records: the row commits with
 * the change or not at all, and so does its webhook delivery (the tailer reads the table's rows
 * from the WAL).
 */
export async function append(db: Queryable, env: { projectId: string; name: string }, event: NewAuthEvent, now: Date): Promise<void> {
  await db.query(`${INSERT} VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`, parameters(env, event, now));
}

/**
 * An event for an account that may not exist (a failed login): nothing is written without a
 * user, but the same statement runs either way, so an unknown address costs the database work of
 * a registered one.
 */
export async function appendIfUser(db: Queryable, env: { projectId: string; name: string }, event: NewAuthEvent, now: Date): Promise<void> {
  await db.query(
    `${INSERT} SELECT $1, $2, $3, $4::uuid, $5::uuid, $6, $7, $8, $9::jsonb, $10::timestamptz WHERE $4::uuid IS NOT NULL`,
    parameters(env, event, now),
  );
}

export function parameters(env: { projectId: string; name: string }, event: NewAuthEvent, now: Date): unknown[] {
  return [
    env.projectId,
    env.name,
    event.type,
    event.userId ?? null,
    event.sessionId ?? null,
    event.actor ?? null,
    event.clientAddress ?? null,
    event.userAgent ?? null,
    JSON.stringify(event.details ?? {}),
    now,
  ];
}
