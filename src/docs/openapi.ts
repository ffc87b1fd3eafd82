import { z } from 'zod';
import { authApi } from '../http/auth/operations.js';
import { mfaApi } from '../http/auth/mfa/operations.js';
import { providersApi } from '../http/auth/providers/operations.js';
import { passwordlessApi } from '../http/auth/passwordless/operations.js';
import { organizationsApi } from '../http/auth/organizations/operations.js';
import { organizationsAdminApi } from '../http/organizations/operations.js';
import type { ErrorCode } from '../core/errors.js';
import { errorBodySchema, errorExample, statusOf } from '../http/error-schema.js';
import type { Operation, OperationGroup } from '../http/operation.js';
import { VERSION } from '../core/version.js';
import { webhooksApi } from '../http/webhooks/operations.js';
import { deliveryWebhooks } from '../http/webhooks/delivery-request.js';
import { environmentApi } from '../http/environment/operations.js';
import { authEventsApi, usersApi } from '../http/users/operations.js';
import { gapsApi } from '../http/gaps/operations.js';
import { destinationsApi } from '../http/destinations/operations.js';

// The OpenAPI 3.1 document of the api, generated from the operation declarations that the routers
// register and parse with (src/http/operation.ts). Nothing here restates a schema, a path or a code.

/** The groups the api serves, in the order of the reference. */
export const API_GROUPS: readonly OperationGroup[] = [
  authApi,
  mfaApi,
  providersApi,
  passwordlessApi,
  organizationsApi,
  webhooksApi,
  destinationsApi,
  gapsApi,
  environmentApi,
  usersApi,
  authEventsApi,
  organizationsAdminApi,
];

type JsonSchema = Record<string, unknown>;

/**
 * A zod schema as the JSON Schema 2020-12 that OpenAPI 3.1 embeds. Requests are described as
 * clients send them (`io: 'input'`: defaults make a field optional), responses as sent.
 */
export function jsonSchemaOf(schema: z.ZodType, io: 'input' | 'output'): JsonSchema {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, { io, target: 'draft-2020-12' }) as JsonSchema;
  return rest;
}

/** `/api/rest/_webhooks` + `/:id/replay` → `/api/rest/_webhooks/{id}/replay`. */
export function documentPath(group: OperationGroup, op: Operation): string {
  const joined = op.path === '/' ? group.mount : `${group.mount}${op.path}`;
  return joined.replace(/:(\w+)/g, '{$1}');
}

function parameters(location: 'header' | 'path' | 'query', schema: z.ZodObject | undefined): JsonSchema[] {
  if (!schema) return [];
  const json = jsonSchemaOf(schema, 'input');
  const properties = (json.properties ?? {}) as Record<string, JsonSchema>;
  const required = new Set((json.required ?? []) as string[]);
  // Description and example belong to the parameter (Swagger UI shows them there, not in the schema).
  return Object.entries(properties).map(([name, { description, examples, ...propertySchema }]) => ({
    name,
    in: location,
    required: location === 'path' || required.has(name),
    ...(description ? { description } : {}),
    ...(Array.isArray(examples) && examples.length ? { example: examples[0] } : {}),
    schema: propertySchema,
  }));
}

const SECURITY_SCHEMES = {
  accessToken: {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'JWT',
    description: 'An access token from login, confirm-signup or refresh-token. Checked against the revocation list on every request.',
  },
  managementToken: {
    type: 'http',
    scheme: 'bearer',
    description: 'A management token (`wgm_…`) from `walgate token create --project <id>`, scoped to one project.',
  },
};

function errorResponses(codes: readonly ErrorCode[]): Record<string, JsonSchema> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of new Set(codes)) byStatus.set(statusOf(code), [...(byStatus.get(statusOf(code)) ?? []), code]);
  const responses: Record<string, JsonSchema> = {};
  for (const [status, group] of [...byStatus].sort(([a], [b]) => a - b)) {
    responses[String(status)] = {
      description: group.map((c) => `\`${c}\``).join(', '),
      ...(status === 429 ? { headers: { 'Retry-After': { description: 'Seconds to wait.', schema: { type: 'integer', minimum: 1 } } } } : {}),
      content: {
        'application/json': {
          schema: jsonSchemaOf(errorBodySchema(group), 'output'),
          examples: Object.fromEntries(group.map((c) => [c, { value: errorExample(c) }])),
        },
      },
    };
  }
  return responses;
}

function successResponse(op: Operation): JsonSchema {
  const { description, schema, headers } = op.success;
  return {
    description,
    ...(headers
      ? { headers: Object.fromEntries(Object.entries(headers).map(([name, h]) => [name, { description: h.description, schema: jsonSchemaOf(h.schema, 'output') }])) }
      : {}),
    ...(schema ? { content: { 'application/json': { schema: jsonSchemaOf(schema, 'output') } } } : {}),
  };
}

function operationObject(group: OperationGroup, id: string, op: Operation): JsonSchema {
  return {
    operationId: id,
    tags: [group.tag],
    summary: op.summary,
    ...(op.description ? { description: op.description } : {}),
    ...(op.security ? { security: [{ [op.security]: [] }] } : {}),
    parameters: [...parameters('path', op.params), ...parameters('header', op.headers), ...parameters('query', op.query)],
    ...(op.body
      ? { requestBody: { required: op.bodyRequired !== false, content: { 'application/json': { schema: jsonSchemaOf(op.body, 'input') } } } }
      : {}),
    responses: { [String(op.success.status)]: successResponse(op), ...errorResponses(op.errors) },
  };
}

const DESCRIPTION = `User authentication for many projects and environments, and management of the webhook
subscriptions that deliver every change of a watched Postgres table.

**Errors** are always JSON: \`{"error": CODE, "message": …}\`, plus \`violations\` with
\`VALIDATION_ERROR\`, \`lockedUntil\` with \`AUTH_ACCOUNT_LOCKED\`, \`retryAfter\` and a \`Retry-After\`
header with \`RATE_LIMIT_EXCEEDED\`. Branch on \`error\`, not on \`message\`. Every operation lists the
codes it can answer with. A path that does not exist is 404 \`NOT_FOUND\`; a method a path does not
have is 405 \`METHOD_NOT_ALLOWED\`.

**Bodies** are JSON (\`Content-Type: application/json\`), at most 100 KB.

**Deliveries**: the POST walgate sends to a subscription's URL — its body and signature headers —
is described at the end, under Webhooks (\`delivery\`), for generating a receiver.`;

/** The document; the same on every call, so callers may keep it. */
export function buildOpenApiDocument(groups: readonly OperationGroup[] = API_GROUPS): JsonSchema {
  const paths: Record<string, Record<string, JsonSchema>> = {};
  for (const group of groups) {
    for (const [id, op] of Object.entries(group.operations)) {
      const path = documentPath(group, op);
      paths[path] = { ...paths[path], [op.method]: operationObject(group, id, op) };
    }
  }
  return {
    openapi: '3.1.1',
    info: { title: 'walgate', version: VERSION, description: DESCRIPTION, license: { name: 'MIT', identifier: 'MIT' } },
    servers: [{ url: '/', description: 'This api' }],
    tags: groups.map((g) => ({
      name: g.tag,
      description: g.aliases.length ? `${g.description}\n\nThe same operations answer under ${g.aliases.map((a) => `\`${a}\``).join(', ')} (the gateway form).` : g.description,
    })),
    paths,
    // What walgate sends (not answers): the delivery POST, for generating a receiver.
    webhooks: deliveryWebhooks(jsonSchemaOf),
    components: { securitySchemes: SECURITY_SCHEMES },
  };
}
