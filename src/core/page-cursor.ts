import { validationError } from './errors.js';

// Cursor pages over rows sorted by (created_at, id), newest first: the cursor is the last row
// shown, opaque to clients (base64url of JSON).

export interface PageCursor {
  createdAt: Date;
  id: string;
}

export function encodePageCursor(c: PageCursor): string {
  return Buffer.from(JSON.stringify([c.createdAt.toISOString(), c.id])).toString('base64url');
}

/** The cursor, or 400 VALIDATION_ERROR; `ids` admits only the ids this API hands out. */
export function decodePageCursor(s: string, ids: RegExp): PageCursor {
  try {
    const [at, id] = JSON.parse(Buffer.from(s, 'base64url').toString('utf8')) as [string, string];
    const createdAt = new Date(at);
    // Only ids this API hands out: anything else (a NUL, SQL, 10 KB) never reaches a query.
    if (typeof id !== 'string' || !ids.test(id) || Number.isNaN(createdAt.getTime())) throw new Error('bad cursor');
    return { createdAt, id };
  } catch {
    throw validationError([{ path: 'cursor', message: 'is not a cursor returned by this API' }]);
  }
}
