import { validationError } from '../../core/errors.js';
import type { AuthEventView } from '../events/store.js';
import { userView } from '../users.js';
import { statusOf, type ListedUser } from './store.js';

// What the admin API shows of users and events, and its page cursors.

export function adminUserView(u: ListedUser, now: Date) {
  return {
    ...userView(u),
    status: statusOf(u, now),
    disabled: u.disabledAt !== null,
    disabledAt: u.disabledAt?.toISOString() ?? null,
    lockedUntil: u.lockedUntil && u.lockedUntil > now ? u.lockedUntil.toISOString() : null,
  };
}

export function eventView({ seq: _seq, ...e }: AuthEventView) {
  return { ...e, createdAt: e.createdAt.toISOString() };
}

export function encodeEventCursor(e: AuthEventView): string {
  return Buffer.from(e.seq).toString('base64url');
}

export function decodeEventCursor(s: string): string {
  const seq = Buffer.from(s, 'base64url').toString('utf8');
  if (!/^\d{1,18}$/.test(seq)) throw validationError([{ path: 'cursor', message: 'is not a cursor returned by this API' }]);
  return seq;
}

export function encodePageCursor(row: { createdAt: Date; id: string }): string {
  return Buffer.from(JSON.stringify([row.createdAt.toISOString(), row.id])).toString('base64url');
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function decodePageCursor(s: string): { createdAt: Date; id: string } {
  try {
    const [at, id] = JSON.parse(Buffer.from(s, 'base64url').toString('utf8')) as [string, string];
    const createdAt = new Date(at);
    // Only what this API hands out reaches a query.
    if (typeof id !== 'string' || !UUID.test(id) || Number.isNaN(createdAt.getTime())) throw new Error('bad cursor');
    return { createdAt, id };
  } catch {
    throw validationError([{ path: 'cursor', message: 'is not a cursor returned by this API' }]);
  }
}
