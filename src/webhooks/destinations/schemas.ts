import { z } from 'zod';
import { DESTINATION_KINDS } from '../../delivery/destinations/address.js';

// Bodies of /api/rest/_destinations (docs/destinations.md). Unknown fields are refused, as for
// subscriptions; credentials are write-only.

export const DESTINATION_NAME = /^[a-z0-9][a-z0-9_-]{0,62}$/;

const headerEcho = z.string().min(1, 'is required').max(63, 'must be at most 63 characters');

const name = z
  .string()
  .regex(DESTINATION_NAME, 'must be 1-63 characters of a-z, 0-9, _ and -, starting with a letter or digit')
  .meta({ description: 'Unique in the environment; subscriptions name it. Cannot be changed.', examples: ['orders-bus'] });

const kind = z.enum(DESTINATION_KINDS, { message: 'must be "nats" or "rabbitmq"' }).meta({
  description: '`nats`: a NATS server with JetStream (2.9 or later). `rabbitmq`: an AMQP 0-9-1 broker (RabbitMQ 3.x).',
});

const url = z
  .string()
  .max(2048, 'must be at most 2048 characters')
  .meta({
    description:
      '`nats://host:4222` for `nats`; `amqp://host:5672/vhost` (or `amqps://`) for `rabbitmq`. No credentials in it; the host must resolve to public addresses only (unless WEBHOOK_ALLOW_PRIVATE_NETWORKS).',
    examples: ['nats://nats.example.com:4222'],
  });

const credential = (what: string) =>
  z
    .string()
    .min(1, 'must not be empty')
    .max(1024, 'must be at most 1024 characters')
    .meta({ description: `${what} Sealed at rest, never returned. \`null\` clears it on update.` });

export const createDestinationBody = z.strictObject({
  projectId: headerEcho.meta({ description: 'Must equal the X-Project-Id header.' }),
  environment: headerEcho.meta({ description: 'Must equal the environment header.' }),
  name,
  kind,
  url,
  username: credential('The user name the broker knows.').optional(),
  password: credential("The user's password.").optional(),
  token: credential('A NATS authentication token (nats only).').optional(),
});

export const updateDestinationBody = z
  .strictObject({
    projectId: headerEcho.optional(),
    environment: headerEcho.optional(),
    url: url.optional(),
    username: credential('The user name the broker knows.').nullish(),
    password: credential("The user's password.").nullish(),
    token: credential('A NATS authentication token (nats only).').nullish(),
  })
  .refine((b) => Object.keys(b).length > 0, 'must change at least one field');

export const destinationParams = z.object({
  id: z.string().meta({ description: 'The destination id.', examples: ['dst_3f6c2a1e9b8d4c7e0a5b1d2c3e4f5a6b'] }),
});

export const destinationListQuery = z.strictObject({
  limit: z.coerce.number().int('must be a whole number').min(1, 'must be at least 1').max(100, 'must be at most 100').default(50),
});

export type CreateDestinationBody = z.output<typeof createDestinationBody>;
export type UpdateDestinationBody = z.output<typeof updateDestinationBody>;

const template = z.string().max(1024, 'must be at most 1024 characters');

/** What a subscription names instead of `url`: a destination and where on it (the kind decides which fields). */
export const destinationRef = z
  .strictObject({
    name: z
      .string()
      .min(1, 'is required')
      .max(63, 'must be at most 63 characters')
      .meta({ description: 'A destination of the environment.' }),
    subject: template.optional().meta({
      description: 'NATS: the subject, a template over `{schema}`, `{table}`, `{event}` and (with ordering "row") `{key}`.',
      examples: ['walgate.{schema}.{table}.{event}'],
    }),
    exchange: z
      .string()
      .max(255, 'must be at most 255 characters')
      .optional()
      .meta({ description: 'RabbitMQ: the exchange ("" is the default exchange).' }),
    routingKey: template.optional().meta({
      description: 'RabbitMQ: the routing key, a template over `{schema}`, `{table}`, `{event}` and (with ordering "row") `{key}`.',
      examples: ['{table}.{event}'],
    }),
  })
  .meta({
    description:
      'Publish to a broker destination instead of POSTing: `{name, subject}` for NATS JetStream, `{name, exchange, routingKey}` for RabbitMQ (docs/destinations.md).',
  });

export type DestinationRef = z.output<typeof destinationRef>;
