import { z } from 'zod';
import { timestamp } from '../timestamp.js';
import { ANY_REQUEST_ERRORS, JSON_BODY_ERRORS, type Operation } from '../operation.js';
import { MANAGEMENT_SCOPE, managementHeaders } from './access.js';
import { backfillBody, webhookParams } from '../../webhooks/schemas.js';

// Backfills of a subscription (docs/backfills.md), part of the webhook API (operations.ts spreads them in).

const common = [...MANAGEMENT_SCOPE, ...ANY_REQUEST_ERRORS] as const;
const shared = { security: 'managementToken', headers: managementHeaders } as const;

export const backfillParams = z.object({
  id: webhookParams.shape.id,
  backfillId: z
    .string()
    .max(200)
    .meta({ description: 'The backfill id.', examples: ['bf_3f6c2a1e9b8d4c7e0a5b1d2c3e4f5a6b'] }),
});

export const backfill = z
  .object({
    id: z.string().meta({ examples: ['bf_3f6c2a1e9b8d4c7e0a5b1d2c3e4f5a6b'] }),
    webhookId: z.string(),
    gapId: z.string().nullable().meta({ description: 'The capture gap it repairs, when started from one.' }),
    state: z.enum(['running', 'done', 'cancelled', 'failed']).meta({
      description: '`running` until every page is delivered (`done`), it is cancelled, or it cannot go on (`failed`, see `error`).',
    }),
    filter: z.record(z.string(), z.unknown()).nullable(),
    sortColumn: z.string().nullable(),
    since: z.string().nullable(),
    rows: z.number().int().nonnegative().meta({ description: 'Rows delivered (or queued for retry) as READ events so far.' }),
    pages: z.int().nonnegative(),
    totalEstimate: z
      .number()
      .int()
      .nonnegative()
      .nullable()
      .meta({ description: 'Rows in the table when it started (an estimate for large tables).' }),
    error: z.string().nullable(),
    createdAt: timestamp,
    updatedAt: timestamp,
    finishedAt: timestamp.nullable(),
  })
  .meta({ description: "A backfill: the table's existing rows delivered to one subscription as READ events." });

export const backfillOperations = {
  createBackfill: {
    ...shared,
    method: 'post',
    path: '/:id/backfill',
    summary: "Deliver the table's existing rows (a backfill)",
    description:
      'Every row of the table (matching the subscription’s filter and `filter`; with `since`, those whose sort column is at least it) is delivered to this subscription only, as an event `"event": "READ"` (header `X-Service-Event: READ`), in keyset pages read between WAL watermarks so that a row changed meanwhile is never delivered stale after its change. One backfill per subscription at a time (409 `BACKFILL_RUNNING`).',
    params: webhookParams,
    body: backfillBody,
    bodyRequired: false,
    success: { status: 202, description: 'Started.', schema: z.object({ backfill }) },
    errors: [...common, ...JSON_BODY_ERRORS, 'WEBHOOK_NOT_FOUND', 'BACKFILL_RUNNING'],
  },
  listBackfills: {
    ...shared,
    method: 'get',
    path: '/:id/backfills',
    summary: "A subscription's backfills",
    params: webhookParams,
    success: { status: 200, description: 'Newest first (100 at most).', schema: z.object({ backfills: z.array(backfill) }) },
    errors: [...common, 'WEBHOOK_NOT_FOUND'],
  },
  getBackfill: {
    ...shared,
    method: 'get',
    path: '/:id/backfills/:backfillId',
    summary: 'A backfill and its progress',
    params: backfillParams,
    success: { status: 200, description: 'The backfill.', schema: z.object({ backfill }) },
    errors: [...common, 'WEBHOOK_NOT_FOUND', 'BACKFILL_NOT_FOUND'],
  },
  cancelBackfill: {
    ...shared,
    method: 'post',
    path: '/:id/backfills/:backfillId/cancel',
    summary: 'Cancel a backfill',
    description:
      'No page is read after this; the page already handed on (at most one) is still delivered. A finished backfill is answered as it is.',
    params: backfillParams,
    bodyRequired: false,
    success: { status: 200, description: 'Cancelled (or already finished).', schema: z.object({ backfill }) },
    errors: [...common, 'WEBHOOK_NOT_FOUND', 'BACKFILL_NOT_FOUND'],
  },
} satisfies Record<string, Operation>;
