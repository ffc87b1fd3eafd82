import { Validator } from '@seriousme/openapi-schema-validator';
import { expect } from 'chai';
import { z } from 'zod';
import * as authRequests from '../../src/auth/schemas.js';
import * as mfaRequests from '../../src/auth/mfa/schemas.js';
import * as passwordlessRequests from '../../src/auth/passwordless/schemas.js';
import { API_GROUPS } from '../../src/docs/openapi.js';
import { createApiApp } from '../../src/main/api-app.js';
import { ERRORS } from '../../src/core/errors.js';
import { projectHeaders } from '../../src/http/scope.js';
import { managementHeaders } from '../../src/http/webhooks/access.js';
import * as webhookRequests from '../../src/webhooks/schemas.js';
import * as destinationRequests from '../../src/webhooks/destinations/schemas.js';
import { settingsPatch } from '../../src/projects/settings.js';
import * as userRequests from '../../src/http/users/schemas.js';
import * as organizationRequests from '../../src/auth/organizations/schemas.js';
import { userMetadataBody } from '../../src/auth/users/metadata.js';
import { startTestApi, type TestApi } from '../support/api.js';
import { documentedOperations, type DocumentedOperation } from '../support/openapi.js';
import { registeredRoutes, type RegisteredRoute } from '../support/routes.js';

// The document at /openapi.json against the code: a valid OpenAPI 3.1 document, listing exactly
// the routes Express has, with the request schemas the routes parse with and the error codes of
// errors.ts.

/** Routes of the api that are not part of the documented API, and why. */
const NOT_DOCUMENTED = new Set([
  'get /healthz', // operators' probes and metrics (docs/operations.md)
  'get /readyz',
  'get /metrics',
  'get /openapi.json', // the reference itself
  'get /docs',
  'get /docs/assets/start.js',
  'get /docs/assets/:file',
  'get /console', // the delivery console's page and modules (docs/console.md)
  'get /console/assets/:file',
  'get /console/assets/views/:file',
  'post /graphql', // GraphQL (DESIGN.md) is described by its own schema, not by OpenAPI
  'get /graphql',
]);

const toDocumentPath = (expressPath: string) => expressPath.replace(/:(\w+)/g, '{$1}');

describe('OpenAPI document: /openapi.json', function () {
  this.timeout(30_000);
  let t: TestApi;
  let doc: Record<string, any>;
  let operations: DocumentedOperation[];
  let routes: RegisteredRoute[];

  before(async () => {
    t = await startTestApi();
    const res = await t.http.get('/openapi.json');
    expect(res.status).to.equal(200);
    doc = res.body;
    operations = documentedOperations(doc);
    routes = registeredRoutes(createApiApp(t.ctx));
  });
  after(() => t.close());

  it('is a valid OpenAPI 3.1 document', async () => {
    const validator = new Validator();
    const result = await validator.validate(doc);
    expect(result.errors, JSON.stringify(result.errors, null, 2)).to.equal(undefined);
    expect(result.valid).to.equal(true);
    expect(validator.version).to.equal('3.1');
  });

  it('covers the authentication and webhook management APIs', () => {
    const listed = operations.map((o) => `${o.method.toUpperCase()} ${o.path}`);
    expect(listed).to.have.members([
      'POST /auth/signup',
      'POST /auth/confirm-signup',
      'POST /auth/login',
      'POST /auth/recover-password',
      'POST /auth/reset-password',
      'POST /auth/refresh-token',
      'POST /auth/otp',
      'POST /auth/otp/verify',
      'POST /auth/magic-link',
      'POST /auth/magic-link/verify',
      'POST /auth/logout',
      'GET /auth/me',
      'GET /auth/.well-known/jwks.json',
      'POST /auth/resend-confirmation',
      'GET /auth/sessions',
      'DELETE /auth/sessions/{id}',
      'GET /api/rest/_environment',
      'PATCH /api/rest/_environment',
      'POST /api/rest/_webhooks',
      'GET /api/rest/_webhooks',
      'GET /api/rest/_webhooks/{id}',
      'PATCH /api/rest/_webhooks/{id}',
      'DELETE /api/rest/_webhooks/{id}',
      'POST /api/rest/_webhooks/{id}/replay',
      'GET /api/rest/_webhooks/{id}/replays/{replayId}',
      'GET /api/rest/_webhooks/_tables',
      'GET /api/rest/_webhooks/{id}/deliveries',
      'GET /api/rest/_webhooks/{id}/deliveries/{deliveryId}',
      'POST /api/rest/_webhooks/{id}/deliveries/{deliveryId}/retry',
      'POST /api/rest/_webhooks/{id}/deliveries/{deliveryId}/discard',
      'GET /api/rest/_webhooks/{id}/minutes',
      'GET /api/rest/_webhooks/_environments',
      'GET /api/rest/_webhooks/_deliveries',
      'GET /api/rest/_webhooks/{id}/health',
      'POST /api/rest/_webhooks/{id}/test',
      'PATCH /auth/me',
      'GET /api/rest/_users',
      'POST /api/rest/_users',
      'GET /api/rest/_users/{id}',
      'PATCH /api/rest/_users/{id}',
      'DELETE /api/rest/_users/{id}',
      'POST /api/rest/_users/{id}/logout',
      'POST /api/rest/_users/{id}/impersonate',
      'GET /api/rest/_users/{id}/events',
      'GET /api/rest/_auth-events',
      'GET /api/rest/_gaps',
      'POST /api/rest/_gaps/{id}/acknowledge',
      'POST /api/rest/_destinations',
      'GET /api/rest/_destinations',
      'GET /api/rest/_destinations/{id}',
      'PATCH /api/rest/_destinations/{id}',
      'DELETE /api/rest/_destinations/{id}',
      'GET /auth/issuers/{projectId}/{environment}/.well-known/openid-configuration',
      'GET /auth/providers/{id}/authorize',
      'GET /auth/providers/{id}/callback',
      'POST /auth/providers/token',
      'GET /auth/identities',
      'DELETE /auth/identities/{id}',
      'POST /auth/mfa/totp/enroll',
      'POST /auth/mfa/totp/verify',
      'GET /auth/mfa/factors',
      'DELETE /auth/mfa/factors/{id}',
      'POST /auth/mfa/recovery-codes',
      'POST /auth/mfa/challenge',
      'POST /auth/passkeys/register/options',
      'POST /auth/passkeys/register/verify',
      'POST /auth/passkeys/login/options',
      'POST /auth/passkeys/login/verify',
      'DELETE /api/rest/_users/{id}/factors/{factorId}',
      'POST /api/rest/_gaps/{id}/backfill',
      'POST /api/rest/_webhooks/{id}/backfill',
      'GET /api/rest/_webhooks/{id}/backfills',
      'GET /api/rest/_webhooks/{id}/backfills/{backfillId}',
      'POST /api/rest/_webhooks/{id}/backfills/{backfillId}/cancel',
      // Organizations (docs/organizations.md)
      'POST /auth/organizations',
      'GET /auth/organizations',
      'POST /auth/organizations/invitations/accept',
      'POST /auth/organizations/active',
      'GET /auth/organizations/{id}',
      'PATCH /auth/organizations/{id}',
      'DELETE /auth/organizations/{id}',
      'POST /auth/organizations/{id}/invitations',
      'DELETE /auth/organizations/{id}/invitations/{invitationId}',
      'PATCH /auth/organizations/{id}/members/{userId}',
      'DELETE /auth/organizations/{id}/members/{userId}',
      'GET /api/rest/_organizations',
      'POST /api/rest/_organizations',
      'GET /api/rest/_organizations/{id}',
      'PATCH /api/rest/_organizations/{id}',
      'DELETE /api/rest/_organizations/{id}',
      'POST /api/rest/_organizations/{id}/members',
      'PATCH /api/rest/_organizations/{id}/members/{userId}',
      'DELETE /api/rest/_organizations/{id}/members/{userId}',
      'POST /api/rest/_organizations/{id}/invitations',
      'DELETE /api/rest/_organizations/{id}/invitations/{invitationId}',
    ]);
  });

  it('every route Express registers is documented, or knowingly left out', () => {
    const documented = new Set(operations.map((o) => `${o.method} ${o.path}`));
    const aliases = API_GROUPS.flatMap((g) => g.aliases.map((alias) => [alias, g.mount] as const));
    const undocumented = routes
      .filter((r) => r.method !== '*')
      .map((r) => {
        const alias = aliases.find(([a]) => r.path === a || r.path.startsWith(`${a}/`));
        const path = alias ? alias[1] + r.path.slice(alias[0].length) : r.path;
        return `${r.method} ${path}`;
      })
      .filter((key) => !NOT_DOCUMENTED.has(key) && !documented.has(toDocumentPath(key)));
    expect(undocumented, 'routes missing from /openapi.json: declare them in an operations registry, or add them to NOT_DOCUMENTED with the reason').to.deep.equal([]);
  });

  it('every documented operation is a route, under its mount and under each alias', () => {
    const registered = new Set(routes.map((r) => `${r.method} ${toDocumentPath(r.path)}`));
    for (const group of API_GROUPS) {
      for (const mount of [group.mount, ...group.aliases]) {
        for (const o of operations.filter((op) => op.path === group.mount || op.path.startsWith(`${group.mount}/`))) {
          const key = `${o.method} ${mount}${o.path.slice(group.mount.length)}`;
          expect(registered.has(key), `${key} is documented but not registered`).to.equal(true);
        }
      }
    }
  });

  it('other methods on documented paths are 405, not 404 (and only on documented paths)', () => {
    const paths = new Set(operations.map((o) => o.path));
    const refusing = routes.filter((r) => r.method === '*' && API_GROUPS.some((g) => r.path.startsWith(g.mount)));
    expect(refusing.map((r) => toDocumentPath(r.path))).to.have.members([...paths]);
  });

  it('request bodies, queries, paths and headers are the JSON Schema of the zod schemas the routes parse with', () => {
    const exported = [
      ...Object.values(authRequests),
      ...Object.values(mfaRequests),
      ...Object.values(passwordlessRequests),
      ...Object.values(webhookRequests),
      ...Object.values(destinationRequests),
      ...Object.values(userRequests),
      ...Object.values(organizationRequests),
      userMetadataBody,
      settingsPatch,
      projectHeaders,
      managementHeaders,
    ];
    const json = (schema: z.ZodType) => {
      const { $schema: _, ...rest } = z.toJSONSchema(schema, { io: 'input' }) as Record<string, unknown>;
      return rest;
    };
    for (const group of API_GROUPS) {
      for (const [id, op] of Object.entries(group.operations)) {
        const documented = operations.find((o) => o.id === id)!.operation;
        if (op.body) {
          expect(exported, `${id}: the body schema is one of the request schemas`).to.include(op.body);
          expect(documented.requestBody.content['application/json'].schema, id).to.deep.equal(json(op.body));
        } else {
          expect(documented.requestBody, `${id} takes no body`).to.equal(undefined);
        }
        for (const [location, schema] of [['query', op.query], ['path', op.params], ['header', op.headers]] as const) {
          const params = documented.parameters.filter((p: { in: string }) => p.in === location);
          if (!schema) {
            expect(params, `${id} ${location}`).to.deep.equal([]);
            continue;
          }
          const expected = json(schema) as { properties: Record<string, { description?: string }>; required?: string[] };
          expect(params.map((p: { name: string }) => p.name), `${id} ${location}`).to.deep.equal(Object.keys(expected.properties));
          for (const p of params) {
            const { description: _description, examples: _examples, ...property } = expected.properties[p.name] as Record<string, unknown>;
            expect(p.schema, `${id} ${location} ${p.name}`).to.deep.equal(property);
            expect(p.required, `${id} ${location} ${p.name} required`).to.equal(location === 'path' || (expected.required ?? []).includes(p.name));
          }
        }
      }
    }
  });

  it('documents a subscription\'s ordering: in the create and update bodies and in every view of a subscription', () => {
    const op = (id: string) => operations.find((o) => o.id === id)!.operation;
    const resolve = (schema: Record<string, any>): Record<string, any> =>
      schema.$ref ? resolve(doc.components.schemas[schema.$ref.split('/').pop()]) : schema;
    // "none" | "row" | {by: [1 to 8 column names]} (a group, docs/webhooks.md).
    const isOrdering = (schema: Record<string, any>, where: string) => {
      const [kinds, group] = schema.anyOf.map(resolve);
      expect(kinds, where).to.deep.include({ enum: ['none', 'row'] });
      expect(group, where).to.deep.include({ type: 'object', required: ['by'], additionalProperties: false });
      expect(group.properties.by, where).to.deep.include({ type: 'array', minItems: 1, maxItems: 8 });
    };
    const createSchema = resolve(op('createWebhook').requestBody.content['application/json'].schema);
    isOrdering(createSchema.properties.ordering, 'create');
    expect(createSchema.properties.ordering).to.deep.include({ default: 'none' });
    expect(createSchema.properties.ordering.description).to.contain('primary key').and.contain('{by: [columns]}');
    expect(createSchema.required).not.to.include('ordering');
    const updateSchema = resolve(op('updateWebhook').requestBody.content['application/json'].schema);
    isOrdering(updateSchema.properties.ordering, 'update');
    for (const [id, path] of [
      ['createWebhook', ['webhook']],
      ['updateWebhook', ['webhook']],
      ['getWebhook', ['webhook']],
      ['listWebhooks', ['webhooks', 'items']],
    ] as const) {
      let schema = resolve(op(id).responses[id === 'createWebhook' ? '201' : '200'].content['application/json'].schema);
      for (const step of path) schema = resolve(step === 'items' ? schema.items : schema.properties[step]);
      isOrdering(schema.properties.ordering, id);
      expect(schema.required, id).to.include('ordering');
    }
  });

  it('error responses use the codes of errors.ts, each under its own status, with the envelope', () => {
    for (const o of operations) {
      for (const [status, response] of Object.entries<any>(o.operation.responses)) {
        if (Number(status) < 400) continue;
        const examples = response.content['application/json'].examples as Record<string, { value: { error: string; message: string } }>;
        for (const [code, { value }] of Object.entries(examples)) {
          expect(ERRORS, `${o.id} ${status}`).to.have.property(code);
          expect(ERRORS[code as keyof typeof ERRORS][0], `${o.id}: ${code} under ${status}`).to.equal(Number(status));
          expect(value).to.include({ error: code });
          expect(value.message).to.be.a('string');
        }
        const schema = response.content['application/json'].schema;
        const variants: Array<{ properties: { error: { const: string } } }> = schema.oneOf ?? schema.anyOf ?? [schema];
        expect(variants.map((v) => v.properties.error.const), `${o.id} ${status}`).to.have.members(Object.keys(examples));
        if (status === '429') expect(response.headers).to.have.property('Retry-After');
      }
    }
  });

  it('every operation lists the errors of its kind', () => {
    const codes = (o: DocumentedOperation) =>
      Object.values<any>(o.operation.responses).flatMap((r) => Object.keys(r.content?.['application/json']?.examples ?? {}));
    for (const o of operations) {
      const has = codes(o);
      expect(has, `${o.id}: a bug or a dependency down`).to.include.members(['INTERNAL_ERROR', 'SERVICE_UNAVAILABLE']);
      if (o.operation.requestBody) expect(has, `${o.id}: a JSON body`).to.include.members(['VALIDATION_ERROR', 'PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE']);
      if (o.path.startsWith('/auth/')) expect(has, `${o.id}: the project headers`).to.include.members(['VALIDATION_ERROR', 'AUTH_NOT_CONFIGURED']);
      if (o.operation.security?.[0]?.accessToken) expect(has, `${o.id}: an access token`).to.include.members(['AUTH_TOKEN_INVALID', 'AUTH_TOKEN_EXPIRED']);
      if (/^\/api\/rest\/_(webhooks|users|auth-events)/.test(o.path)) {
        expect(o.operation.security, o.id).to.deep.equal([{ managementToken: [] }]);
        expect(has, `${o.id}: the management scope`).to.include.members(['AUTH_TOKEN_INVALID', 'VALIDATION_ERROR', 'FORBIDDEN', 'RATE_LIMIT_EXCEEDED']);
      }
      if (/^\/api\/rest\/_(webhooks|users)\/\{id\}/.test(o.path)) expect(has, o.id).to.include(o.path.startsWith('/api/rest/_users') ? 'USER_NOT_FOUND' : 'WEBHOOK_NOT_FOUND');
      if (o.path.startsWith('/api/rest/_environment')) expect(has, `${o.id}: the management scope`).to.include.members(['AUTH_TOKEN_INVALID', 'FORBIDDEN']);
      if (o.path.startsWith('/api/rest/_gaps/{id}')) expect(has, o.id).to.include('GAP_NOT_FOUND');
    }
  });
});
