import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { expect } from 'chai';
import { buildOpenApiDocument } from '../../src/docs/openapi.js';
import { startPipeline, type Pipeline } from '../delivery/support.js';

// The `webhooks` entry of /openapi.json describes the POST walgate sends: a delivery the tailer
// really sent (INSERT, UPDATE, DELETE) must match its body schema and carry every header it names.

describe('OpenAPI document: the delivery request walgate sends (webhooks)', function () {
  this.timeout(30_000);
  let p: Pipeline;
  before(async () => {
    p = await startPipeline();
  });
  after(() => p?.close());

  it('is served at /openapi.json, and a real INSERT, UPDATE and DELETE delivery validate against it', async () => {
    const served = (await p.t.http.get('/openapi.json')).body as Record<string, any>;
    expect(served.webhooks).to.deep.equal(buildOpenApiDocument().webhooks);
    const post = served.webhooks.delivery.post;
    const ajv = new Ajv2020.default({ allErrors: true, strict: true, allowUnionTypes: true });
    addFormats.default(ajv);
    const validate = ajv.compile(post.requestBody.content['application/json'].schema);

    await p.subscribe({ secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' });
    await p.writer.query(`INSERT INTO shop_master.orders VALUES (1, 'new', 10.50)`);
    await p.writer.query(`UPDATE shop_master.orders SET status = 'paid' WHERE id = 1`);
    await p.writer.query(`DELETE FROM shop_master.orders WHERE id = 1`);
    const requests = await p.receiver.waitFor(3);
    const events = [];
    for (const r of requests) {
      const body = JSON.parse(r.body);
      events.push(body.event);
      expect(validate(body), JSON.stringify(validate.errors)).to.equal(true);
      for (const h of post.parameters as Array<{ name: string; in: string; required: boolean }>) {
        expect(h.in).to.equal('header');
        expect(r.headers[h.name.toLowerCase()], `${body.event}: header ${h.name}`).to.be.a('string').and.not.equal('');
      }
    }
    expect(events).to.have.members(['INSERT', 'UPDATE', 'DELETE']);
    // The schema is not a rubber stamp: a body without its record is refused.
    const { record: _record, ...withoutRecord } = JSON.parse(requests[0]!.body);
    expect(validate(withoutRecord)).to.equal(false);
  });

  it("a batched subscription's request validates against the second message (deliveryBatch), headers and all", async () => {
    const post = ((await p.t.http.get('/openapi.json')).body as Record<string, any>).webhooks.deliveryBatch.post;
    const ajv = new Ajv2020.default({ allErrors: true, strict: true, allowUnionTypes: true });
    addFormats.default(ajv);
    const validate = ajv.compile(post.requestBody.content['application/json'].schema);
    p.receiver.requests.length = 0;
    await p.removeSubscriptions();
    await p.subscribe({ secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', batch: { maxEvents: 10 } });
    await p.writer.query(`INSERT INTO shop_master.orders SELECT g, 'new', g FROM generate_series(10, 12) g`);
    const [r] = await p.receiver.waitFor(1);
    const body = JSON.parse(r!.body);
    expect(validate(body), JSON.stringify(validate.errors)).to.equal(true);
    expect(body.events.length).to.be.at.least(1);
    for (const h of post.parameters as Array<{ name: string; in: string }>) {
      expect(r!.headers[h.name.toLowerCase()], `header ${h.name}`).to.be.a('string').and.not.equal('');
    }
    expect(r!.headers['x-service-event']).to.equal('BATCH');
    // A single delivery's body is not a batch.
    expect(validate(body.events[0])).to.equal(false);
  });

  it('every timestamp in the document has a realistic example (Swagger UI would otherwise invent one from the pattern)', () => {
    const missing: string[] = [];
    // A parameter carries its example itself, beside its schema.
    const walk = (node: unknown, where: string, parameterExample?: string): void => {
      if (Array.isArray(node)) return node.forEach((n, i) => walk(n, `${where}/${i}`));
      if (!node || typeof node !== 'object') return;
      const schema = node as Record<string, unknown>;
      if (schema.in && schema.schema) return walk(schema.schema, `${where}/schema`, schema.example as string | undefined);
      if (schema.format === 'date-time') {
        const example = (schema.examples as string[] | undefined)?.[0] ?? parameterExample;
        const year = example ? new Date(example).getUTCFullYear() : NaN;
        if (!(year >= 2020 && year <= 2100)) missing.push(where);
      }
      for (const [k, v] of Object.entries(schema)) walk(v, `${where}/${k}`);
    };
    walk(buildOpenApiDocument(), '#');
    expect(missing).to.deep.equal([]);
  });
});
