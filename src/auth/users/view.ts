import { validationError } from '../../core/errors.js';
import { decodePageCursor, encodePageCursor } from '../../core/page-cursor.js';
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

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export const encodeUserCursor = encodePageCursor;

export const decodeUserCursor = (s: string) => decodePageCursor(s, UUID);
