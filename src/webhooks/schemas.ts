import { z } from 'zod';
import { rateLimit } from './rate-limit.js';
import { retryPolicy } from './retry-policy.js';
import { headersSchema } from './headers.js';
import { isFeed, MESSAGES_TABLE } from '../tailer/capture/index.js';
import { filterDocument } from './filter-schema.js';
import { destinationRef } from './destinations/schemas.js';

// Bodies of the management API. Unknown fields are refused: a typo (`filters`, `actve`) must not
// silently create a subscription that does something else.

export const EVENTS = ['INSERT', 'UPDATE', 'DELETE', 'TRUNCATE'] as const;

const name = z.string().min(1, 'is required').max(63, 'must be at most 63 characters');
const columnName = z.string().min(1, 'must not be empty').max(63, 'must be at most 63 characters');

const events = z
  .array(z.enum(EVENTS, { message: 'must be INSERT, UPDATE, DELETE or TRUNCATE' }))
  .min(1, 'must name at least one of INSERT, UPDATE, DELETE')
  .refine((e) => new Set(e).size === e.length, 'must not repeat an event')
  .meta({ description: 'The kinds of change to deliver, without repeats.' });

/** A backfill's own filter (docs/backfills.md): equality on columns only. */
const equalityFilter = z
  .record(
    columnName,
    z.union([z.string(), z.number(), z.boolean(), z.null()], { message: 'must be a string, number, boolean or null (equality)' }),
  )
  .refine((f) => Object.keys(f).length <= 32, 'must have at most 32 fields')
  .meta({
    description: 'Column → value, equality (numbers by value).',
    examples: [{ status: 'paid' }],
  });

const select = z
  .array(columnName)
  .min(1, 'must name at least one column')
  .max(256, 'must have at most 256 columns')
  .refine((s) => new Set(s).size === s.length, 'must not repeat a column')
  .meta({ description: 'The columns that record, data, old_record and changed_fields are restricted to. `null` clears it on update.' });

const secret = z
  .string()
  .min(16, 'must be at least 16 characters')
  .max(1024, 'must be at most 1024 characters')
  .meta({ description: 'The HMAC signing key (`whsec_<base64>` for Standard Webhooks). Encrypted at rest, never returned.' });
const url = z
  .string()
  .max(2048, 'must be at most 2048 characters')
  .meta({
    description: 'An `https:` URL without credentials whose host resolves to public addresses only.',
    examples: ['https://example.com/hooks'],
  });

export const ORDERINGS = ['none', 'row'] as const;

/** The most columns a group may name: a group is an identity (an account, a conversation), not a row. */
export const MAX_GROUP_COLUMNS = 8;

/** `{by: [columns]}`: 1 to 8 columns of the table (checked against it by the service), no repeats. */
export const orderingGroup = z
  .strictObject({
    by: z
      .array(columnName)
      .min(1, 'must name at least one column')
      // Not .max(): inside the union, zod reports a too_big array as the union's own failure
      // ("must be none, row or…"), hiding where the body went wrong; a custom issue keeps its path.
      .meta({ maxItems: MAX_GROUP_COLUMNS })
      .superRefine((columns, ctx) => {
        if (columns.length > MAX_GROUP_COLUMNS) ctx.addIssue({ code: 'custom', message: `must name at most ${MAX_GROUP_COLUMNS} columns` });
        columns.forEach((c, i) => {
          if (columns.indexOf(c) !== i) ctx.addIssue({ code: 'custom', path: [i], message: `repeats ${JSON.stringify(c)}` });
        });
      }),
  })
  .meta({
    description: 'The columns whose values make a group: changes with equal values are delivered one at a time, in commit order.',
    examples: [{ by: ['account_id'] }],
  });

const ordering = z.union([z.enum(ORDERINGS), orderingGroup], { error: 'must be "none", "row" or {"by": [columns]}' }).meta({
  description:
    '`row`: the changes of one row (by its primary key) are delivered one at a time, in commit order; different rows still go out in parallel. Needs a table with a primary key. `{by: [columns]}`: the same per group — the changes whose values of these columns are equal (an account, a conversation); a change that moves a row to another group orders under both; NULL is a group of its own. `none` (default): no order is promised.',
});

export const HISTORIES = ['full', 'failures'] as const;

const history = z.enum(HISTORIES, { message: 'must be "full" or "failures"' }).meta({
  description:
    '`full` (default): every delivery is in the delivery log. `failures`: a change delivered at its first attempt leaves no row — only its count in the health figures — while every delivery that failed, waited or was retried keeps its row, attempts and payload (docs/webhooks.md: History).',
});

export const ON_DEAD = ['skip', 'hold'] as const;

export const ON_DEAD_NEEDS_ORDER = 'holds a row (or group) behind its dead letter: needs ordering "row" or {"by": [columns]}';

const onDead = z.enum(ON_DEAD, { message: 'must be "skip" or "hold"' }).meta({
  description:
    'With `ordering: "row"` or a group: what a dead letter does to its row (or group). `skip` (default): the later changes go on. `hold`: they wait behind it until it is replayed and delivered, or discarded (`POST …/deliveries/{deliveryId}/discard`).',
});

/** Batching's bounds (sql/075_batches.sql checks the same): a batch is one request, in memory whole. */
export const BATCH_LIMITS = {
  maxEvents: { min: 1, max: 1000, default: 1 },
  maxWaitMs: { min: 0, max: 10_000, default: 100 },
  maxBytes: { min: 1024, max: 10 * 1024 * 1024, default: 1024 * 1024 },
} as const;

const bounded = (b: { min: number; max: number }) =>
  z
    .number({ message: 'must be a number' })
    .int('must be a whole number')
    .min(b.min, `must be at least ${b.min}`)
    .max(b.max, `must be at most ${b.max}`);

const batch = z
  .strictObject({
    maxEvents: bounded(BATCH_LIMITS.maxEvents)
      .default(BATCH_LIMITS.maxEvents.default)
      .meta({ description: 'Changes per request at most, 1–1000. `1` (default): no batching, one request per change.' }),
    maxWaitMs: bounded(BATCH_LIMITS.maxWaitMs)
      .default(BATCH_LIMITS.maxWaitMs.default)
      .meta({ description: 'How long a change may wait for others to fill its batch, 0–10000 ms (default 100).' }),
    maxBytes: bounded(BATCH_LIMITS.maxBytes).default(BATCH_LIMITS.maxBytes.default).meta({
      description:
        "The batch's events' bodies together at most, 1024–10485760 bytes (default 1 MiB); a single larger change still goes, alone in its batch.",
    }),
  })
  .meta({
    description:
      'Batched delivery: one POST carries `{"events": [...]}`, up to `maxEvents` changes, signed over the whole body, with one `webhook-id` (the batch id, the same on every retry of the batch, with the same events). A 2xx acknowledges all of them; any other answer retries the whole batch (docs/webhooks.md: Batching). `null` on update turns it off.',
  });

/**
 * Messages (`_messages`, docs/outbox.md) and the feeds (`_auth_events`, `_operations`) are INSERT
 * events only: a subscription on them without INSERT would get nothing.
 */
const messagesTakeInserts = [
  (b: { table?: string; events?: readonly string[] }) =>
    !(b.table === MESSAGES_TABLE || (b.table !== undefined && isFeed(b.table))) || !b.events || b.events.includes('INSERT'),
  {
    message:
      'messages and walgate’s own events arrive as INSERT events: a subscription on _messages, _auth_events or _operations must include INSERT',
    path: ['events'] as string[],
  },
] as const;

export const createBody = z
  .strictObject({
    projectId: name.meta({ description: 'Must equal the X-Project-Id header.' }),
    environment: name.meta({ description: 'Must equal the environment header.' }),
    table: name.meta({ description: "A table (not a view) in the environment's schema, named exactly." }),
    events,
    url: url.optional(),
    destination: destinationRef.optional(),
    secret,
    active: z.boolean().default(true),
    filter: filterDocument.nullish(),
    select: select.nullish(),
    ordering: ordering.default('none'),
    history: history.default('full'),
    onDead: onDead.default('skip'),
    batch: batch.nullish(),
    headers: headersSchema.nullish(),
    retry: retryPolicy.nullish(),
    rateLimit: rateLimit.nullish(),
  })
  .refine(...messagesTakeInserts)
  .refine((b) => b.url !== undefined || b.destination !== undefined, { message: 'is required, or a destination instead', path: ['url'] })
  .refine((b) => b.url === undefined || b.destination === undefined, {
    message: 'give url or destination, not both',
    path: ['destination'],
  })
  .refine((b) => b.onDead === 'skip' || b.ordering !== 'none', {
    message: ON_DEAD_NEEDS_ORDER,
    path: ['onDead'],
  });

export const updateBody = z
  .strictObject({
    projectId: name.optional(),
    environment: name.optional(),
    table: name.optional(),
    events: events.optional(),
    url: url.optional(),
    destination: destinationRef.optional(),
    secret: secret.optional(),
    active: z.boolean().optional(),
    filter: filterDocument.nullish(),
    select: select.nullish(),
    ordering: ordering.optional(),
    history: history.optional(),
    onDead: onDead.optional(),
    batch: batch.nullish(),
    headers: headersSchema.nullish(),
    retry: retryPolicy.nullish(),
    rateLimit: rateLimit.nullish(),
  })
  .refine((b) => Object.keys(b).length > 0, 'must change at least one field')
  .refine((b) => b.url === undefined || b.destination === undefined, {
    message: 'give url or destination, not both',
    path: ['destination'],
  })
  .refine(...messagesTakeInserts);

export const listQuery = z.strictObject({
  limit: z.coerce.number().int('must be a whole number').min(1, 'must be at least 1').max(100, 'must be at most 100').default(20),
  cursor: z.string().max(512).optional(),
});

/** Times walgate stores and compares: years 1 to 9999 (JavaScript's range reaches beyond Postgres's, a 500). */
export function representable(at: Date): boolean {
  const t = at.getTime();
  return t >= EARLIEST && t <= LATEST;
}
const EARLIEST = Date.parse('0001-01-01T00:00:00Z');
const LATEST = Date.parse('9999-12-31T23:59:59.999Z');

const isoTime = z.iso
  .datetime({ offset: true, message: 'must be an ISO 8601 timestamp' })
  .refine((s) => Number.isNaN(Date.parse(s)) || representable(new Date(s)), 'must be between the years 1 and 9999')
  .meta({ examples: ['2026-11-25T10:00:00Z'] });

export const replayBody = z.strictObject({
  since: isoTime.optional(),
  until: isoTime.optional(),
  dryRun: z
    .boolean()
    .default(false)
    .meta({ description: '`true`: only count the dead deliveries that would be replayed; nothing changes.' }),
});

export const deliveryListQuery = z.strictObject({
  status: z.enum(['pending', 'retrying', 'delivered', 'dead'], { message: 'must be pending, retrying, delivered or dead' }).optional(),
  since: isoTime.optional().meta({ description: 'Only deliveries created at or after this time.' }),
  until: isoTime.optional().meta({ description: 'Only deliveries created before this time.' }),
  limit: z.coerce.number().int('must be a whole number').min(1, 'must be at least 1').max(100, 'must be at most 100').default(50),
  cursor: z.string().max(512).optional(),
});

export const eventSearchQuery = z.strictObject({
  eventId: z
    .string()
    .min(1, 'is required')
    .max(256, 'must be at most 256 characters')
    .meta({ description: 'The event id (`id` of the payload, `webhook-id` header).', examples: ['evt_0000000001A2B3C4_000003'] }),
});

export const deliveryParams = z.object({
  id: z.string().meta({ description: 'The subscription id.', examples: ['wh_3f6c2a1e9b8d4c7e0a5b1d2c3e4f5a6b'] }),
  deliveryId: z
    .string()
    .meta({ description: 'The delivery id.', examples: ['del_0000000001A2B3C4_000003_3f6c2a1e9b8d4c7e0a5b1d2c3e4f5a6b'] }),
});

export const replayParams = z.object({
  id: z.string().meta({ description: 'The subscription id.', examples: ['wh_3f6c2a1e9b8d4c7e0a5b1d2c3e4f5a6b'] }),
  replayId: z
    .string()
    .meta({ description: 'The replay id, from the replay’s answer.', examples: ['rpl_3f6c2a1e9b8d4c7e0a5b1d2c3e4f5a6b'] }),
});

export const webhookParams = z.object({
  id: z.string().meta({ description: 'The subscription id.', examples: ['wh_3f6c2a1e9b8d4c7e0a5b1d2c3e4f5a6b'] }),
});

/** POST …/{id}/backfill (docs/backfills.md). */
export const backfillBody = z.strictObject({
  filter: equalityFilter
    .nullish()
    .meta({ description: 'Column → value (equality): only matching rows, besides the subscription’s own filter.' }),
  sortColumn: columnName.optional().meta({
    description: 'The column pages are ordered by (then the primary key); default the primary key. Rows where it is NULL are not read.',
  }),
  since: z
    .string()
    .max(200, 'must be at most 200 characters')
    .optional()
    .meta({
      description: 'Only rows whose sort column is at least this (written as Postgres reads a value of the column).',
      examples: ['2026-11-01T00:00:00Z'],
    }),
});

export type CreateBody = z.output<typeof createBody>;
export type UpdateBody = z.output<typeof updateBody>;
