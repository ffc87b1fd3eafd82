import { validationError } from './errors.js';

// Cursor pages over rows sorted by (created_at, id), newest first (the admin API's users): the
// cursor is the last row shown, opaque to clients (base64url of JSON).

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
    if (typeof at !== 'string' || typeof id !== 'string' || !ids.test(id) || !storable(createdAt)) throw new Error('bad cursor');
    return { createdAt, id };
  } catch {
    throw validationError([{ path: 'cursor', message: 'is not a cursor returned by this API' }]);
  }
}

/** Years 1 to 9999: JavaScript's dates reach beyond Postgres's (a 500 there). */
function storable(at: Date): boolean {
  const t = at.getTime();
  return t >= Date.parse('0001-01-01T00:00:00Z') && t <= Date.parse('9999-12-31T23:59:59.999Z');
}
