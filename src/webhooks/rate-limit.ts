import { z } from 'zod';

// A subscription's throttle: `rateLimit: {perSecond, burst?}` — at most perSecond requests a second
// to its receiver (a batch is one request), and burst of them at once after a quiet spell (default
// 1: evenly spaced). Deliveries wait for their turn; a wait is never an attempt nor a breaker
// failure (delivery/throttle.ts). Null: no throttle.

export const RATE_LIMIT_BOUNDS = { perSecond: { min: 0.01, max: 10_000 }, burst: { min: 1, max: 10_000 } } as const;

export const rateLimit = z
  .strictObject({
    perSecond: z
      .number({ message: 'must be a number' })
      .min(RATE_LIMIT_BOUNDS.perSecond.min, `must be at least ${RATE_LIMIT_BOUNDS.perSecond.min}`)
      .max(RATE_LIMIT_BOUNDS.perSecond.max, `must be at most ${RATE_LIMIT_BOUNDS.perSecond.max}`)
      .meta({ description: 'Requests a second at most (a batch is one request), 0.01–10000.' }),
    burst: z
      .int('must be a whole number')
      .min(RATE_LIMIT_BOUNDS.burst.min, `must be at least ${RATE_LIMIT_BOUNDS.burst.min}`)
      .max(RATE_LIMIT_BOUNDS.burst.max, `must be at most ${RATE_LIMIT_BOUNDS.burst.max}`)
      .default(1)
      .meta({
        description:
          'Requests that may go at once after a quiet spell (default 1: evenly spaced); any second carries at most burst + perSecond.',
      }),
  })
  .meta({
    description:
      'A throttle: deliveries wait for their turn (never an attempt, never a breaker failure), so the receiver gets at most `perSecond` requests a second. `null` on update removes it (docs/webhooks.md: Throttle).',
    examples: [{ perSecond: 20, burst: 1 }],
  });

export type RateLimit = z.output<typeof rateLimit>;
