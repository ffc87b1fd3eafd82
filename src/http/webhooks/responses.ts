import { rateLimit } from '../../webhooks/rate-limit.js';
import { retryPolicy } from '../../webhooks/retry-policy.js';
import { z } from 'zod';
import { timestamp } from '../timestamp.js';
import { EVENTS, HISTORIES, ON_DEAD, ORDERINGS, orderingGroup } from '../../webhooks/schemas.js';
import { SUBSCRIPTION_STATES } from '../../delivery/subscription-state.js';
import { filterDocument } from '../../webhooks/filter-schema.js';
import { destinationRef } from '../../webhooks/destinations/schemas.js';

// What the management API answers, as schemas for the API reference. test/docs/contract.test.ts
// checks real answers against the generated document, so a field added or renamed in view.ts or
// delivery/history.ts without its schema here fails the tests.

const webhook = z
  .object({
    id: z.string().meta({ examples: ['wh_3f6c2a1e9b8d4c7e0a5b1d2c3e4f5a6b'] }),
    table: z.string(),
    events: z.array(z.enum(EVENTS)),
    url: z.string().nullable().meta({ description: 'The https: URL it POSTs to; null when it publishes to a destination.' }),
    destination: destinationRef.nullable(),
    active: z.boolean().meta({ description: '`false`: paused, no deliveries for changes made meanwhile.' }),
    state: z.enum(SUBSCRIPTION_STATES).meta({
      description:
        "How its deliveries go: `healthy`; `failing` (its endpoint's latest attempts failed; the delivery log says why); " +
        "`breaker_open` (its endpoint's breaker holds requests until the cool-down ends); `disabled` (`active` is false: paused, or disabled by a 410). docs/webhooks.md: Subscription state.",
    }),
    filter: filterDocument.nullable(),
    select: z.array(z.string()).nullable(),
    ordering: z.union([z.enum(ORDERINGS), orderingGroup]).meta({
      description:
        "`row`: a row's changes are delivered one at a time, in commit order (docs/webhooks.md: Ordering); `{by: [columns]}`: a group's (the columns as sent); `none`: no order.",
    }),
    history: z.enum(HISTORIES).meta({
      description:
        '`full`: every delivery is in the delivery log. `failures`: changes delivered at their first attempt are counted in the health figures but not listed (docs/webhooks.md: History).',
    }),
    onDead: z.enum(ON_DEAD).meta({
      description:
        'With `ordering: "row"` or a group: `hold` — a row\'s (a group\'s) later changes wait behind its dead letter until it is replayed and delivered, or discarded; `skip` — they go on.',
    }),
    batch: z.object({ maxEvents: z.number().int(), maxWaitMs: z.number().int(), maxBytes: z.number().int() }).meta({
      description:
        'Batched delivery: up to `maxEvents` changes per POST as `{"events": [...]}` (`1`: off, one POST per change), gathered for at most `maxWaitMs`, the body within `maxBytes` (docs/webhooks.md: Batching).',
    }),
    createdAt: timestamp,
    updatedAt: timestamp,
    disabledReason: z
      .string()
      .nullable()
      .meta({ description: 'Why delivery disabled it (its receiver answered 410 Gone); null otherwise.' }),
    disabledAt: timestamp.nullable().meta({ description: 'When delivery disabled it; null otherwise.' }),
    problems: z
      .array(
        z.object({
          code: z.enum([
            'TABLE_MISSING',
            'FILTER_COLUMN_MISSING',
            'SELECT_COLUMN_MISSING',
            'ORDERING_COLUMN_MISSING',
            'REPLICA_IDENTITY_CHANGED',
            'DESTINATION_TARGET_MISSING',
          ]),
          message: z.string(),
          since: timestamp.meta({ description: 'When walgate first saw it.' }),
        }),
      )
      .meta({ description: 'What walgate cannot follow any more (docs: Schema changes); `[]` when healthy.' }),
    headers: z
      .array(z.string())
      .meta({ description: 'The names of its custom request headers (lower case); their values are never returned.' }),
    retry: retryPolicy.nullable(),
    rateLimit: rateLimit.nullable(),
  })
  .meta({ description: 'A subscription. The secret and the custom header values are never returned.' });

const delivery = z.object({
  id: z.string().meta({ examples: ['del_…'] }),
  eventId: z.string().meta({
    description: 'The `id` of the payload and the X-Service-Delivery header: deduplicate by it.',
    examples: ['evt_0000000001A2B3C4_000003'],
  }),
  event: z.enum([...EVENTS, 'READ']).meta({ description: '`READ`: a row delivered by a backfill.' }),
  status: z.enum(['pending', 'retrying', 'delivered', 'dead']).meta({ description: '`dead`: every attempt failed; kept until replayed.' }),
  httpStatus: z.int().min(100).max(599).nullable().meta({ description: "The subscriber's status at the last attempt." }),
  attempts: z.int().nonnegative(),
  lastError: z.string().nullable(),
  nextAttemptAt: timestamp.nullable(),
  deliveredAt: timestamp.nullable(),
  createdAt: timestamp,
  holdsRow: z.boolean().meta({
    description:
      'A dead letter of a subscription with `onDead: "hold"`: its row\'s later changes wait behind it until it is retried and delivered, or discarded.',
  }),
  batchId: z.string().nullable().meta({
    description:
      'The batch it was sent in — the `webhook-id` of that request (docs/webhooks.md: Batching); null when sent alone or not sent yet.',
  }),
});

const attempt = z.object({
  kind: z.enum(['request', 'wait']).meta({
    description:
      "`request`: a request was sent. `wait`: it came due while the endpoint's breaker was open — no request was sent and no attempt was spent; it goes when the breaker lets it.",
  }),
  attempt: z.int().positive().meta({
    description: 'Its number; a replay starts again at 1, a retry counts on. A wait carries the number of the attempt that waited.',
  }),
  startedAt: timestamp,
  durationMs: z.int().nonnegative(),
  httpStatus: z.int().min(100).max(599).nullable().meta({ description: "The subscriber's status; null when it did not answer." }),
  error: z.string().nullable(),
  responseBody: z.string().nullable().meta({ description: 'The first KiB of the answer as text; null without an answer.' }),
});

const deliveryDetail = delivery.extend({
  attemptLog: z.array(attempt).meta({ description: 'Every attempt, oldest first.' }),
  payload: z
    .record(z.string(), z.unknown())
    .nullable()
    .meta({ description: 'The body as sent, kept for the retention window (WEBHOOK_KEEP_PAYLOADS); null when not kept.' }),
  body: z.string().nullable().meta({
    description:
      "The body as text, byte for byte as signed and sent (`payload` is it parsed, which can lose a number's trailing zeros); null with `payload`.",
  }),
  requestHeaders: z.record(z.string(), z.string()).nullable().meta({
    description:
      'The request headers of the latest attempt, without the signatures; custom header values show as `[hidden]`. Null when not kept.',
  }),
  responseHeaders: z.record(z.string(), z.string()).nullable().meta({
    description: 'The headers of the latest answer (up to 50, values cut at 256 characters); null when not kept or not answered.',
  }),
});

const breaker = z.object({
  state: z.enum(['closed', 'open', 'half-open']).meta({
    description:
      '`open`: no request is sent to this endpoint; deliveries that come due wait (logged as `wait`, no attempt spent) and go when it closes. `half-open`: one probe is due.',
  }),
  openUntil: timestamp.nullable(),
  consecutiveFailures: z.int().nonnegative(),
});

const health = z
  .object({
    breaker,
    disabledReason: z
      .string()
      .nullable()
      .meta({ description: 'Why the receiver disabled the subscription (a 410), while it is disabled.' }),
    disabledAt: timestamp.nullable(),
    lastSuccessAt: timestamp.nullable(),
    failuresLastHour: z.int().nonnegative().meta({ description: 'Failed attempts that started within the last hour.' }),
    throttledLastHour: z
      .int()
      .nonnegative()
      .meta({ description: "Requests that waited for the throttle's turn (`rateLimit`) within the last hour; 0 without a throttle." }),
    throttledMsLastHour: z.int().nonnegative().meta({ description: 'How long those requests waited, in all (ms).' }),
    backlog: z.int().nonnegative().meta({ description: 'Deliveries not finished yet (pending or retrying), counted up to 100000.' }),
  })
  .meta({ description: "How the subscription's deliveries go." });

export const webhookResponse = z.object({ webhook });

export const webhookListResponse = z.object({
  webhooks: z.array(webhook.extend({ breaker })).meta({ description: "Newest first, each with its endpoint's breaker." }),
  nextCursor: z.string().nullable().meta({ description: 'Pass as `cursor` for the next page; `null` on the last.' }),
});

export const webhookDetailResponse = z.object({
  webhook,
  health,
  deliveries: z.array(delivery).meta({ description: 'The newest 50.' }),
});

const replay = z
  .object({
    id: z.string(),
    state: z
      .enum(['running', 'done', 'failed'])
      .meta({ description: '`running`: a background job; `done` once every one is pending again.' }),
    count: z.int().nonnegative().meta({ description: 'Dead deliveries in the range when the replay was asked for.' }),
    replayed: z.int().nonnegative().meta({ description: 'Made pending again so far.' }),
    createdAt: timestamp,
    finishedAt: timestamp.nullable(),
  })
  .meta({ description: 'A replay of dead deliveries.' });

export const replayResponse = z.object({
  replayed: z
    .int()
    .nonnegative()
    .meta({ description: 'Dead deliveries made pending again by the time of the answer (with `dryRun`: that would be).' }),
  replay: replay.optional().meta({ description: 'The replay (absent with `dryRun`).' }),
});

export const replayJobResponse = z.object({ replay });

export const deliveryListResponse = z.object({
  deliveries: z.array(delivery).meta({ description: 'Newest first.' }),
  nextCursor: z.string().nullable().meta({ description: 'Pass as `cursor` for the next page; `null` on the last.' }),
  history: z.enum(HISTORIES).meta({ description: "The subscription's history mode: what this log can list." }),
  notListed: z.string().nullable().meta({
    description:
      'What this log cannot show, in a sentence: with `history: "failures"`, the changes delivered at their first attempt (counted in `…/health` and `…/minutes`). `null` with `full`.',
  }),
});

export const deliveryDetailResponse = z.object({ delivery: deliveryDetail });

export const deliveryResponse = z.object({ delivery });

export const deliveryMinutesResponse = z.object({
  minutes: z
    .array(
      z.object({
        minute: timestamp.meta({ description: "The minute's start." }),
        delivered: z.int().nonnegative(),
        failed: z.int().nonnegative(),
        throttled: z.int().nonnegative(),
      }),
    )
    .meta({
      description:
        "The last 60 minutes, oldest first: deliveries that succeeded, attempts that failed, requests that waited for the throttle's turn.",
    }),
});

export const tablesResponse = z.object({
  tables: z
    .array(
      z.object({
        name: z.string(),
        columns: z.array(z.object({ name: z.string(), type: z.string().meta({ examples: ['integer', 'text', 'numeric(12,2)'] }) })),
      }),
    )
    .meta({ description: "The environment's tables (not views), by name; columns in their order." }),
});

export const environmentsResponse = z.object({
  environments: z.array(z.object({ name: z.string() })).meta({ description: "The project's environments, by name." }),
});

export const eventDeliveriesResponse = z.object({
  deliveries: z
    .array(delivery.extend({ webhookId: z.string(), table: z.string(), url: z.string() }))
    .meta({ description: 'One per subscription that took the event; empty when none did.' }),
});

const rate = z.number().min(0).max(1).nullable();
const ms = z.int().nonnegative().nullable();

export const webhookHealthResponse = z.object({
  windows: z
    .array(
      z.object({
        window: z.enum(['24h', '7d']),
        delivered: z.int().nonnegative(),
        dead: z.int().nonnegative(),
        unfinished: z.int().nonnegative(),
        attemptsSucceeded: z.int().nonnegative(),
        attemptsFailed: z.int().nonnegative(),
        throttled: z.int().nonnegative().meta({ description: "Requests that waited for the throttle's turn." }),
        throttledMs: z.int().nonnegative().meta({ description: 'How long they waited, in all (ms).' }),
        successRate: rate.meta({ description: 'Attempts answered 2xx over all attempts; null without an attempt.' }),
        latencyP50Ms: ms,
        latencyP95Ms: ms,
      }),
    )
    .meta({ description: 'The last 24 hours, then the last 7 days.' }),
});
