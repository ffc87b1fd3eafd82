import { z } from 'zod';
import { EVENTS } from '../../webhooks/schemas.js';

// The request walgate sends to a subscriber, as the `webhooks` entry of the OpenAPI document
// (OpenAPI 3.1), so a receiver can be generated from it (src/docs/openapi.ts). The body is built by
// src/delivery/payload.ts and the headers by src/delivery/attempt.ts and signing.ts;
// test/docs/delivery-request.test.ts validates a delivery the tailer really sent against it.

const row = z
  .record(z.string(), z.unknown())
  .meta({ description: "The row's columns (the subscription's `select` applied), as JSON values." });

const EXAMPLE = { id: 1, customer: 'ada@example.com', total: 19.9, created_at: '2026-11-25T10:00:00.123456+00:00' };

export const deliveryPayload = z
  .object({
    id: z.string().meta({
      description: 'The event id: the same on every attempt and for every subscription; sorts by WAL position. Deduplicate by it.',
      examples: ['evt_0000000001A2B3C4_000003'],
    }),
    timestamp: z.iso.datetime().meta({ description: 'When the change was committed.', examples: ['2026-11-25T10:00:00.123Z'] }),
    project_id: z.string().meta({ examples: ['demo'] }),
    environment: z.string().meta({ examples: ['master'] }),
    table: z.string().meta({ description: 'The table, without its schema.', examples: ['orders'] }),
    event: z.enum(EVENTS),
    record: row.meta({ description: 'The row after the change (before it, for a DELETE).', examples: [EXAMPLE] }),
    data: row.meta({ description: 'The same as `record`.', examples: [EXAMPLE] }),
    old_record: row.nullable().meta({ description: 'The row before an UPDATE or DELETE; null for an INSERT.', examples: [null] }),
    changed_fields: z.array(z.string()).meta({
      description: 'The columns an UPDATE changed (of the selected ones).',
      examples: [['total']],
    }),
    previous_event_id: z
      .string()
      .nullable()
      .meta({
        description:
          'With `ordering: "row"`: the id of the change of this row sent to this subscription before this one, so a receiver can tell a gap (a change passed over as dead, with `onDead: "skip"`). Null when not known (the first change of a row since the tailer started, a row not changed for long) and for unordered subscriptions.',
        examples: ['evt_0000000001A2B3C4_000002'],
      }),
  })
  .meta({ title: 'Delivery' });

/** A batched subscription's body (docs/webhooks.md: Batching): each event exactly as it is delivered alone. */
export const deliveryBatchPayload = z
  .object({
    events: z.array(deliveryPayload).min(1).max(1000).meta({
      description: "The batch's changes, in the order walgate took them (a row's changes in commit order), at most `batch.maxEvents`.",
    }),
  })
  .meta({ title: 'Delivery batch' });

const header = (description: string, example: string) => ({ description, required: true, schema: { type: 'string', examples: [example] } });

const HEADERS = {
  'Content-Type': header('Always `application/json`.', 'application/json'),
  'User-Agent': header("walgate's name and version.", 'walgate/0.1.0'),
  'X-Service-Event': header('`INSERT`, `UPDATE` or `DELETE`.', 'INSERT'),
  'X-Service-Delivery': header('The event id, as `id` in the body.', 'evt_0000000001A2B3C4_000003'),
  'X-Service-Signature': header(
    '`sha256=` and the hex HMAC-SHA256 of the body, keyed with the subscription secret.',
    'sha256=6c0f2e4bc1f0d6e1f6f1b7c1b8d7c8b1e7a4a8f0c8e1b5a3d2c9e7f1a0b2c4d6',
  ),
  'X-Webhook-Signature': header('The same hex HMAC, bare.', '6c0f2e4bc1f0d6e1f6f1b7c1b8d7c8b1e7a4a8f0c8e1b5a3d2c9e7f1a0b2c4d6'),
  'webhook-id': header('Standard Webhooks: the event id.', 'evt_0000000001A2B3C4_000003'),
  'webhook-timestamp': header('Standard Webhooks: Unix seconds of this attempt.', '1795600800'),
  'webhook-signature': header(
    'Standard Webhooks: `v1,` and the base64 HMAC-SHA256 of `id.timestamp.body`, one per valid secret (two during a rotation), space-separated.',
    'v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=',
  ),
};

/** A batch's headers: the same names, with the batch's id where a single delivery has its event id. */
const BATCH_HEADERS = {
  ...HEADERS,
  'X-Service-Event': header('`BATCH`.', 'BATCH'),
  'X-Service-Delivery': header('The batch id, as `webhook-id`.', 'bat_3f6c2a1e9b8d4c7e0a5b1d2c3e4f5a6b'),
  'webhook-id': header(
    'Standard Webhooks: the batch id — the same on every attempt of the batch, which always carries the same events. Deduplicate by it, or by each event `id`.',
    'bat_3f6c2a1e9b8d4c7e0a5b1d2c3e4f5a6b',
  ),
};

type JsonSchema = Record<string, unknown>;

/** The `webhooks` entry: one POST per change a subscription takes, or per batch of them (`batch.maxEvents` > 1). */
export function deliveryWebhooks(jsonSchemaOf: (schema: z.ZodType, io: 'input' | 'output') => JsonSchema): JsonSchema {
  return {
    delivery: {
      post: {
        operationId: 'delivery',
        tags: ['Deliveries (sent by walgate)'],
        summary: 'A change, delivered to a subscription URL',
        description:
          'walgate POSTs each change a subscription takes to its URL, the same bytes on every attempt. Verify a signature before trusting the body. Answer 2xx within `WEBHOOK_TIMEOUT_MS`; any other answer (redirects included) or none is retried with backoff, then kept as a dead letter. `410 Gone` disables the subscription; `429`/`503` with `Retry-After` delays the next attempt.',
        parameters: Object.entries(HEADERS).map(([name, h]) => ({ name, in: 'header', ...h })),
        requestBody: { required: true, content: { 'application/json': { schema: jsonSchemaOf(deliveryPayload, 'output') } } },
        responses: {
          '2XX': { description: 'Delivered.' },
          default: { description: 'A failed attempt: retried later.' },
        },
      },
    },
    deliveryBatch: {
      post: {
        operationId: 'deliveryBatch',
        tags: ['Deliveries (sent by walgate)'],
        summary: 'A batch of changes, delivered to a batched subscription URL',
        description:
          'A subscription with `batch.maxEvents` > 1 POSTs its changes in batches: `{"events": [...]}`, up to `maxEvents` of them (and `maxBytes` of body), gathered for at most `maxWaitMs`. One `webhook-id` (the batch id), signed over the whole body exactly as a single delivery is. A 2xx acknowledges every event of the batch; any other answer (or none) retries the whole batch — the same id, the same events, the same bytes — with backoff, then keeps each of its deliveries as a dead letter.',
        parameters: Object.entries(BATCH_HEADERS).map(([name, h]) => ({ name, in: 'header', ...h })),
        requestBody: { required: true, content: { 'application/json': { schema: jsonSchemaOf(deliveryBatchPayload, 'output') } } },
        responses: {
          '2XX': { description: 'Every event of the batch is delivered.' },
          default: { description: 'A failed attempt: the whole batch is retried later.' },
        },
      },
    },
  };
}
