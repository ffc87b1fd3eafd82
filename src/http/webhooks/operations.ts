import { ANY_REQUEST_ERRORS, JSON_BODY_ERRORS, type Operation, type OperationGroup } from '../operation.js';
import { MANAGEMENT_SCOPE, managementHeaders } from './access.js';
import * as res from './responses.js';
import * as body from '../../webhooks/schemas.js';
import { backfillOperations } from './backfill-operations.js';

// The webhook management API, declared once for the router (routes.ts) and the reference.

const common = [...MANAGEMENT_SCOPE, ...ANY_REQUEST_ERRORS] as const;
const withBody = [...common, ...JSON_BODY_ERRORS] as const;

const shared = { security: 'managementToken', headers: managementHeaders } as const;

const operations = {
  // Before /:id, so that `_tables` is not taken for a subscription id (ids start with `wh_`).
  listWebhookTables: {
    ...shared,
    method: 'get',
    path: '/_tables',
    summary: "The environment's tables and their columns",
    description: "What `table`, `filter` and `select` may name: the tables of the environment's Postgres schema.",
    success: { status: 200, description: 'The tables, by name.', schema: res.tablesResponse },
    errors: common,
  },
  listEnvironments: {
    ...shared,
    method: 'get',
    path: '/_environments',
    summary: "The project's environments",
    description: 'The environments the management token may name in the `environment` header.',
    success: { status: 200, description: 'By name.', schema: res.environmentsResponse },
    errors: common,
  },
  searchEvent: {
    ...shared,
    method: 'get',
    path: '/_deliveries',
    summary: "An event's deliveries across subscriptions",
    description: "Every delivery of the event (`id` of the payload, `webhook-id` header) among the environment's subscriptions.",
    query: body.eventSearchQuery,
    success: { status: 200, description: 'One per subscription that took the event.', schema: res.eventDeliveriesResponse },
    errors: common,
  },
  createWebhook: {
    ...shared,
    method: 'post',
    path: '/',
    summary: 'Create a subscription',
    description:
      'Unknown fields are refused. The table joins the publication (with `REPLICA IDENTITY FULL`) in the same transaction, so changes are captured from the commit on. A table walgate may not alter is a 503 with the reason.',
    body: body.createBody,
    success: { status: 201, description: 'Created.', schema: res.webhookResponse },
    errors: withBody,
  },
  listWebhooks: {
    ...shared,
    method: 'get',
    path: '/',
    summary: 'List subscriptions',
    query: body.listQuery,
    success: { status: 200, description: 'A page of subscriptions, newest first.', schema: res.webhookListResponse },
    errors: common,
  },
  getWebhook: {
    ...shared,
    method: 'get',
    path: '/:id',
    summary: 'A subscription and its newest deliveries',
    params: body.webhookParams,
    success: { status: 200, description: 'The subscription and its newest 50 deliveries.', schema: res.webhookDetailResponse },
    errors: [...common, 'WEBHOOK_NOT_FOUND'],
  },
  updateWebhook: {
    ...shared,
    method: 'patch',
    path: '/:id',
    summary: 'Update a subscription',
    description:
      'Any of the fields; `null` clears `filter` or `select`. Rotate the secret here (receivers may accept the old and the new one during the switch); `active: false` pauses.',
    params: body.webhookParams,
    body: body.updateBody,
    success: { status: 200, description: 'Updated.', schema: res.webhookResponse },
    errors: [...withBody, 'WEBHOOK_NOT_FOUND'],
  },
  deleteWebhook: {
    ...shared,
    method: 'delete',
    path: '/:id',
    summary: 'Delete a subscription',
    description: 'Its pending deliveries go with it; the last subscription of a table takes the table out of the publication.',
    params: body.webhookParams,
    success: { status: 204, description: 'Deleted.' },
    errors: [...common, 'WEBHOOK_NOT_FOUND'],
  },
  replayWebhook: {
    ...shared,
    method: 'post',
    path: '/:id/replay',
    summary: 'Replay dead deliveries',
    description:
      'Dead deliveries of the subscription (created within the range, when given) are pending again, due now, with a fresh set of attempts. With `dryRun`, only counts them. Up to 1000 are replayed within the request (`replay.state` is `done`); more run as a background job (`running`): follow it with `GET …/replays/{replayId}`.',
    params: body.webhookParams,
    body: body.replayBody,
    bodyRequired: false,
    success: { status: 202, description: 'Replayed, or replaying.', schema: res.replayResponse },
    errors: [...withBody, 'WEBHOOK_NOT_FOUND'],
  },
  getReplay: {
    ...shared,
    method: 'get',
    path: '/:id/replays/:replayId',
    summary: 'A replay and its progress',
    params: body.replayParams,
    success: { status: 200, description: 'The replay.', schema: res.replayJobResponse },
    errors: [...common, 'WEBHOOK_NOT_FOUND', 'REPLAY_NOT_FOUND'],
  },
  listDeliveries: {
    ...shared,
    method: 'get',
    path: '/:id/deliveries',
    summary: "A subscription's delivery log",
    description: 'Newest first, filtered by `status` and by creation time (`since` inclusive, `until` exclusive); cursor pagination.',
    params: body.webhookParams,
    query: body.deliveryListQuery,
    success: { status: 200, description: 'A page of deliveries.', schema: res.deliveryListResponse },
    errors: [...common, 'WEBHOOK_NOT_FOUND'],
  },
  getDelivery: {
    ...shared,
    method: 'get',
    path: '/:id/deliveries/:deliveryId',
    summary: 'One delivery with every attempt',
    description: "Each attempt's time, duration, HTTP status, error and the first KiB of the answer; the payload while its event is kept.",
    params: body.deliveryParams,
    success: { status: 200, description: 'The delivery.', schema: res.deliveryDetailResponse },
    errors: [...common, 'WEBHOOK_NOT_FOUND', 'DELIVERY_NOT_FOUND'],
  },
  retryDelivery: {
    ...shared,
    method: 'post',
    path: '/:id/deliveries/:deliveryId/retry',
    summary: 'Send one delivery again now',
    description:
      'A delivered or dead delivery is pending again, due now; its attempts count on, so the new ones join its log. For many dead letters at once use replay. A pending or retrying delivery is 409.',
    params: body.deliveryParams,
    success: { status: 202, description: 'Pending again.', schema: res.deliveryResponse },
    errors: [...common, 'WEBHOOK_NOT_FOUND', 'DELIVERY_NOT_FOUND', 'DELIVERY_NOT_FINISHED', 'DELIVERY_PAYLOAD_GONE'],
  },
  discardDelivery: {
    ...shared,
    method: 'post',
    path: '/:id/deliveries/:deliveryId/discard',
    summary: 'Let a held row go on past its dead letter',
    description:
      'With `onDead: "hold"`, a row-ordered dead letter holds its row\'s later changes. Discarding it lets them go on; it stays dead and listed (and can still be retried, then going behind nothing). A delivery that holds no row is 409.',
    params: body.deliveryParams,
    success: { status: 200, description: 'Discarded: its row goes on.', schema: res.deliveryResponse },
    errors: [...common, 'WEBHOOK_NOT_FOUND', 'DELIVERY_NOT_FOUND', 'DELIVERY_NOT_HELD'],
  },
  getDeliveryMinutes: {
    ...shared,
    method: 'get',
    path: '/:id/minutes',
    summary: 'Delivered and failed per minute, last hour',
    params: body.webhookParams,
    success: { status: 200, description: 'Sixty buckets, oldest first.', schema: res.deliveryMinutesResponse },
    errors: [...common, 'WEBHOOK_NOT_FOUND'],
  },
  getWebhookHealth: {
    ...shared,
    method: 'get',
    path: '/:id/health',
    summary: 'Success rate and latency, last 24 hours and 7 days',
    description:
      'Deliveries created in each window by where they stand (delivered, dead, unfinished), and their attempts apart: answered 2xx or not, with the p50 and p95 of their durations.',
    params: body.webhookParams,
    success: { status: 200, description: 'Two windows.', schema: res.webhookHealthResponse },
    errors: [...common, 'WEBHOOK_NOT_FOUND'],
  },
  testWebhook: {
    ...shared,
    method: 'post',
    path: '/:id/test',
    summary: 'Send a test event',
    description:
      'A sample INSERT of the subscription\'s table (a row shaped by its columns) is delivered like any other: signed, retried, in the delivery log. Its payload has `"test": true` and the request an `x-walgate-test: true` header. A paused subscription keeps it pending until resumed.',
    params: body.webhookParams,
    bodyRequired: false,
    success: { status: 202, description: 'Queued.', schema: res.deliveryResponse },
    errors: [...common, 'WEBHOOK_NOT_FOUND', 'SERVICE_UNAVAILABLE'],
  },
  ...backfillOperations,
} satisfies Record<string, Operation>;

export const webhooksApi = {
  tag: 'Webhooks',
  description:
    'Subscriptions to INSERT, UPDATE and DELETE on a table, delivered as signed HTTPS POSTs with retries, dead letters and circuit breakers. Every call needs a management token (`walgate token create`) and both `X-Project-ID` and `environment`.',
  mount: '/api/rest/_webhooks',
  aliases: ['/gw/api/rest/_webhooks'],
  operations,
} satisfies OperationGroup;
