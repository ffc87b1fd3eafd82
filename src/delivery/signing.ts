import { createHmac } from 'node:crypto';

// Every delivery is signed twice over the exact bytes sent:
// - the seed's headers: HMAC-SHA256 of the body with the secret, hex, as `X-Service-Signature:
//   sha256=<hex>` and bare in `X-Webhook-Signature`;
// - Standard Webhooks: `webhook-signature: v1,<base64 HMAC-SHA256 of "id.timestamp.body">`, keyed
//   with the secret's bytes, or with the base64 after `whsec_` when the secret has that form.
// During a secret rotation's grace period the subscription has two secrets, newest first:
// `webhook-signature` then carries one signature per secret, space-separated (Standard Webhooks
// allows several), so a receiver that knows either verifies; the seed's headers carry only the
// newest (they have room for one).

export function hexSignature(secret: string, body: string): string {
  return createHmac('sha256', Buffer.from(secret, 'utf8')).update(body, 'utf8').digest('hex');
}

export function standardWebhooksKey(secret: string): Buffer {
  return secret.startsWith('whsec_') ? Buffer.from(secret.slice(6), 'base64') : Buffer.from(secret, 'utf8');
}

export function standardSignature(secret: string, messageId: string, timestampSeconds: number, body: string): string {
  const mac = createHmac('sha256', standardWebhooksKey(secret)).update(`${messageId}.${timestampSeconds}.${body}`, 'utf8').digest('base64');
  return `v1,${mac}`;
}

/** `secrets`: the subscription's valid secrets, newest first (one, or two during a rotation's grace). */
export function signatureHeaders(
  secrets: readonly string[],
  eventId: string,
  body: string,
  timestampSeconds: number,
): Record<string, string> {
  const [newest] = secrets;
  if (newest === undefined) throw new Error('signatureHeaders: no secret');
  const hex = hexSignature(newest, body);
  return {
    'x-service-signature': `sha256=${hex}`,
    'x-webhook-signature': hex,
    'webhook-id': eventId,
    'webhook-timestamp': String(timestampSeconds),
    'webhook-signature': secrets.map((s) => standardSignature(s, eventId, timestampSeconds, body)).join(' '),
  };
}
