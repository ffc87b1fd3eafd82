import { z } from 'zod';
import { timestamp } from '../timestamp.js';
import type { ErrorCode } from '../../core/errors.js';
import { ANY_REQUEST_ERRORS, type Operation, type OperationGroup } from '../operation.js';
import { managementHeaders } from '../webhooks/access.js';
import { backfill } from '../webhooks/backfill-operations.js';

// Capture gaps (docs/schema-changes.md): stretches of WAL walgate could not capture, kept until
// acknowledged. Same token and headers as the webhook API.

const common = [
  'AUTH_TOKEN_INVALID',
  'VALIDATION_ERROR',
  'FORBIDDEN',
  'RATE_LIMIT_EXCEEDED',
  ...ANY_REQUEST_ERRORS,
] as const satisfies readonly ErrorCode[];
const shared = { security: 'managementToken', headers: managementHeaders } as const;

const lsn = z
  .string()
  .nullable()
  .meta({ examples: ['0/40EB7498'] });

const gap = z
  .object({
    id: z.string().meta({ examples: ['gap_3f6c2a1e9b8d4c7e0a5b1d2c3e4f5a6b'] }),
    slotName: z.string(),
    reason: z.enum(['slot_lost', 'slot_missing', 'position_rewound']).meta({
      description:
        '`slot_lost`: Postgres removed WAL the slot needed (max_slot_wal_keep_size); `slot_missing`: the slot was dropped; ' +
        "`position_rewound`: the server's WAL ended before what was already processed (a restore from a backup, a failover to a standby that was behind).",
    }),
    fromLsn: lsn.meta({
      description: 'The last position processed before the gap (`position_rewound`: where the server WAL ended after the rewind).',
    }),
    toLsn: lsn.meta({
      description:
        'Where capture resumed; null for a moment while the new slot is created (`position_rewound`: the highest position processed before).',
    }),
    fromTime: timestamp.nullable(),
    toTime: timestamp,
    webhookIds: z.array(z.string()).meta({ description: "This environment's subscriptions that were active, and missed changes." }),
    acknowledgedAt: timestamp.nullable(),
    acknowledgedBy: z.string().nullable().meta({ description: 'The management token id that acknowledged it.' }),
  })
  .meta({ description: 'Changes between fromLsn and toLsn were not captured.' });

const operations = {
  listGaps: {
    ...shared,
    method: 'get',
    path: '/',
    summary: 'Capture gaps',
    description: 'Newest first. `?open=true`: only those not acknowledged yet (while one exists, `/readyz` says `degraded`).',
    query: z.strictObject({ open: z.enum(['true', 'false']).default('false') }),
    success: { status: 200, description: 'The gaps.', schema: z.object({ gaps: z.array(gap) }) },
    errors: common,
  },
  acknowledgeGap: {
    ...shared,
    method: 'post',
    path: '/:id/acknowledge',
    summary: 'Acknowledge a capture gap',
    description: 'It stays listed, acknowledged; it no longer makes `/readyz` degraded.',
    params: z.object({ id: z.string().max(200) }),
    success: { status: 200, description: 'Acknowledged.', schema: z.object({ gap }) },
    errors: [...common, 'GAP_NOT_FOUND'],
  },
  backfillGap: {
    ...shared,
    method: 'post',
    path: '/:id/backfill',
    summary: 'Repair a capture gap with backfills',
    description:
      'Starts a backfill (`POST /api/rest/_webhooks/{id}/backfill`, whole table) of every subscription the gap affected that still exists; one already being backfilled keeps the backfill it has, listed too. The gap stays open until acknowledged.',
    params: z.object({ id: z.string().max(200) }),
    bodyRequired: false,
    success: {
      status: 202,
      description: 'The backfills, one per affected subscription.',
      schema: z.object({ backfills: z.array(backfill) }),
    },
    errors: [...common, 'GAP_NOT_FOUND'],
  },
} satisfies Record<string, Operation>;

export const gapsApi = {
  tag: 'Capture gaps',
  description: 'Stretches of WAL whose changes walgate could not capture (a lost or dropped replication slot), visible until acknowledged.',
  mount: '/api/rest/_gaps',
  aliases: ['/gw/api/rest/_gaps'],
  operations,
} satisfies OperationGroup;
