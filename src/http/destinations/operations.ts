import { z } from 'zod';
import { DESTINATION_KINDS } from '../../delivery/destinations/address.js';
import * as body from '../../webhooks/destinations/schemas.js';
import { ANY_REQUEST_ERRORS, JSON_BODY_ERRORS, type Operation, type OperationGroup } from '../operation.js';
import { timestamp } from '../timestamp.js';
import { MANAGEMENT_SCOPE, managementHeaders } from '../webhooks/access.js';

// Broker destinations (docs/destinations.md), declared once for the router and the reference.
// Same token, headers and error envelope as the webhook API.

const common = [...MANAGEMENT_SCOPE, ...ANY_REQUEST_ERRORS] as const;
const withBody = [...common, ...JSON_BODY_ERRORS] as const;
const shared = { security: 'managementToken', headers: managementHeaders } as const;

const destination = z
  .object({
    id: z.string().meta({ examples: ['dst_3f6c2a1e9b8d4c7e0a5b1d2c3e4f5a6b'] }),
    name: z.string().meta({ examples: ['orders-bus'] }),
    kind: z.enum(DESTINATION_KINDS),
    url: z.string().meta({ examples: ['nats://nats.example.com:4222'] }),
    credentials: z
      .object({ username: z.boolean(), password: z.boolean(), token: z.boolean() })
      .meta({ description: 'Which credentials are set; their values are never returned.' }),
    createdAt: timestamp,
    updatedAt: timestamp,
  })
  .meta({ description: 'A NATS JetStream or RabbitMQ server that subscriptions of the environment may publish to.' });

const destinationResponse = z.object({ destination });

const operations = {
  createDestination: {
    ...shared,
    method: 'post',
    path: '/',
    summary: 'Create a destination',
    description:
      'Unknown fields are refused. The URL is checked for its kind and against the address policy (as webhook URLs); credentials are sealed and never returned.',
    body: body.createDestinationBody,
    success: { status: 201, description: 'Created.', schema: destinationResponse },
    errors: withBody,
  },
  listDestinations: {
    ...shared,
    method: 'get',
    path: '/',
    summary: "The environment's destinations",
    query: body.destinationListQuery,
    success: { status: 200, description: 'By name.', schema: z.object({ destinations: z.array(destination) }) },
    errors: common,
  },
  getDestination: {
    ...shared,
    method: 'get',
    path: '/:id',
    summary: 'A destination and the subscriptions that deliver to it',
    params: body.destinationParams,
    success: {
      status: 200,
      description: 'The destination.',
      schema: z.object({
        destination,
        subscriptions: z.array(z.string()).meta({ description: 'Ids of the subscriptions that deliver to it.' }),
      }),
    },
    errors: [...common, 'DESTINATION_NOT_FOUND'],
  },
  updateDestination: {
    ...shared,
    method: 'patch',
    path: '/:id',
    summary: 'Update a destination',
    description:
      'A new `url` or credentials (`null` clears one). The tailer picks the change up within seconds and reconnects. `name` and `kind` cannot change.',
    params: body.destinationParams,
    body: body.updateDestinationBody,
    success: { status: 200, description: 'Updated.', schema: destinationResponse },
    errors: [...withBody, 'DESTINATION_NOT_FOUND'],
  },
  deleteDestination: {
    ...shared,
    method: 'delete',
    path: '/:id',
    summary: 'Delete a destination',
    description: 'Only when no subscription delivers to it: otherwise 409 `DESTINATION_IN_USE` naming them.',
    params: body.destinationParams,
    success: { status: 204, description: 'Deleted.' },
    errors: [...common, 'DESTINATION_NOT_FOUND', 'DESTINATION_IN_USE'],
  },
} satisfies Record<string, Operation>;

export const destinationsApi = {
  tag: 'Destinations',
  description:
    'NATS JetStream and RabbitMQ servers that subscriptions publish to instead of POSTing to a URL (docs/destinations.md). Every call needs a management token and both `X-Project-ID` and `environment`.',
  mount: '/api/rest/_destinations',
  aliases: ['/gw/api/rest/_destinations'],
  operations,
} satisfies OperationGroup;
