import { signatureHeaders } from '../../src/delivery/signing.js';

// What the bench's baselines send, byte for byte the shape walgate sends: the seed's payload
// (record and data, old_record, changed_fields) signed both ways (the seed's hex HMAC and
// Standard Webhooks'), with the same signing code. A baseline that skipped a signature or
// built a smaller body would not be doing the same work.

export interface SeedChange {
  eventId: string;
  /** When the change committed (or, for a trigger, when its transaction began). */
  at: Date;
  table: string;
  operation: 'INSERT' | 'UPDATE' | 'DELETE';
  /** The row, already as JSON. */
  recordJson: string;
}

export function seedBody(c: SeedChange): string {
  return (
    `{"id":${JSON.stringify(c.eventId)},"timestamp":${JSON.stringify(c.at.toISOString())}` +
    `,"project_id":"bench","environment":"master","table":${JSON.stringify(c.table)},"event":"${c.operation}"` +
    `,"record":${c.recordJson},"data":${c.recordJson},"old_record":null,"changed_fields":[]}`
  );
}

/** The request headers walgate sends with a body (both signatures, the event headers). */
export function seedHeaders(secret: string, c: SeedChange, body: string): Record<string, string> {
  return {
    'content-type': 'application/json',
    'user-agent': 'walgate-bench-baseline',
    'x-service-event': c.operation,
    'x-service-delivery': c.eventId,
    ...signatureHeaders([secret], c.eventId, body, Math.floor(c.at.getTime() / 1000)),
  };
}
