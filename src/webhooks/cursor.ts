import { validationError } from '../core/errors.js';
import { representable } from './schemas.js';

// Cursor pages of the webhook API (subscriptions, a subscription's delivery log): the cursor is
// the last row shown, by (created_at, id), opaque to clients (base64url of JSON).

export interface Cursor {
  createdAt: Date;
  id: string;
}

export function encodeCursor(c: Cursor): string {
  return Buffer.from(JSON.stringify([c.createdAt.toISOString(), c.id])).toString('base64url');
}

export function decodeCursor(s: string, ids = /^wh_\w{1,125}$/): Cursor {
  try {
    const [at, id] = JSON.parse(Buffer.from(s, 'base64url').toString('utf8')) as [string, string];
    const createdAt = new Date(at);
    // Only ids this API hands out: anything else (a NUL, SQL, 10 KB) never reaches a query.
    if (typeof at !== 'string' || typeof id !== 'string' || !ids.test(id) || !representable(createdAt)) throw new Error('bad cursor');
    return { createdAt, id };
  } catch {
    throw validationError([{ path: 'cursor', message: 'is not a cursor returned by this API' }]);
  }
}
