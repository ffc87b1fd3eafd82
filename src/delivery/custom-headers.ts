import type { SecretBox } from '../core/crypto/secretbox.js';

// Custom request headers of a subscription (an API key, a routing header): the receiver sees them
// on every attempt. The values may be credentials, so they are sealed under KEY_ENCRYPTION_KEY
// and never returned, logged or shown; the names are not secret and the API shows them.

export const MAX_CUSTOM_HEADERS = 10;

/** The header that marks a test event (POST …/{id}/test); a receiver can skip such deliveries. */
export const TEST_EVENT_HEADER = 'x-walgate-test';

/**
 * Names walgate sets itself or that describe the connection: a subscription may not set them, so
 * a custom header can neither forge a signature, an id or a test mark, nor break the request.
 */
export const RESERVED_HEADERS: ReadonlySet<string> = new Set([
  'content-type',
  'content-length',
  'content-encoding',
  'host',
  'user-agent',
  'webhook-id',
  'webhook-timestamp',
  'webhook-signature',
  'x-service-signature',
  'x-webhook-signature',
  'x-service-event',
  'x-service-delivery',
  TEST_EVENT_HEADER,
  // Hop-by-hop (RFC 9110 7.6.1) and framing headers.
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'expect',
]);

/** Test events (POST …/{id}/test) carry ids with this prefix: the payload says `"test": true`, the request TEST_EVENT_HEADER. */
export const TEST_EVENT_PREFIX = 'evt_test_';

export function isTestEvent(eventId: string): boolean {
  return eventId.startsWith(TEST_EVENT_PREFIX);
}

const PURPOSE = 'webhook-headers';

export interface SealedHeaders {
  /** Lower-cased, in the order given. */
  names: string[];
  /** Null without headers. */
  values: Buffer | null;
}

export function sealHeaders(secrets: SecretBox, headers: Record<string, string> | null | undefined): SealedHeaders {
  const entries = Object.entries(headers ?? {}).map(([k, v]) => [k.toLowerCase(), v] as const);
  if (entries.length === 0) return { names: [], values: null };
  return { names: entries.map(([k]) => k), values: secrets.seal(JSON.stringify(Object.fromEntries(entries)), PURPOSE) };
}

export function openHeaders(secrets: SecretBox, sealed: Buffer | null): Record<string, string> {
  if (!sealed) return {};
  return JSON.parse(secrets.open(sealed, PURPOSE).toString('utf8')) as Record<string, string>;
}
