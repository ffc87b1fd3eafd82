import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { expect } from 'chai';
import { buildOpenApiDocument } from '../../src/docs/openapi.js';

// Every example in the OpenAPI document against the schema it illustrates: a parameter's
// `example` against the parameter's schema, a media type's `examples` (the error bodies) against
// the response schema, and a JSON Schema's own `examples` against that schema. Ajv checks the
// fields a schema requires, their types and formats, and — responses being documented with
// `additionalProperties: false` — refuses a field the schema does not declare. So an example
// cannot drift from the API it shows: a renamed field or a changed type fails here. The document
// is built in-process (the same function /openapi.json serves), so no api is started.

type Json = Record<string, unknown>;

interface Example {
  where: string; // a JSON pointer to the example
  kind: 'parameter' | 'media' | 'schema';
  value: unknown;
  schema: Json;
}

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Every example of the document, with the schema it must satisfy. */
function examplesOf(doc: Json): Example[] {
  const found: Example[] = [];
  const walk = (node: unknown, pointer: string): void => {
    if (Array.isArray(node)) return node.forEach((item, i) => walk(item, `${pointer}/${i}`));
    if (!isObject(node)) return;
    // A parameter or a media type: its examples illustrate its `schema`. In OpenAPI 3.1 their
    // `examples` is a map of Example Objects, while a JSON Schema's `examples` is an array.
    if (isObject(node.schema)) {
      const kind = 'in' in node ? 'parameter' : 'media';
      if ('example' in node) found.push({ where: `${pointer}/example`, kind, value: node.example, schema: node.schema });
      if (isObject(node.examples)) {
        for (const [name, example] of Object.entries(node.examples)) {
          if (isObject(example) && 'value' in example) found.push({ where: `${pointer}/examples/${name}`, kind, value: example.value, schema: node.schema });
        }
      }
    }
    if (Array.isArray(node.examples)) {
      const { examples, ...schema } = node;
      examples.forEach((value, i) => found.push({ where: `${pointer}/examples/${i}`, kind: 'schema', value, schema }));
    }
    for (const [key, child] of Object.entries(node)) walk(child, `${pointer}/${key.replaceAll('~', '~0').replaceAll('/', '~1')}`);
  };
  walk(doc, '');
  return found;
}

/** The examples that do not satisfy their schema, each with Ajv's reasons. */
function invalidExamples(examples: readonly Example[]): string[] {
  // The options of the contract tests (test/support/openapi.ts): strict, so that a keyword Ajv
  // does not know is an error rather than a silently ignored constraint.
  const ajv = new Ajv2020.default({ allErrors: true, strict: true, allowUnionTypes: true });
  addFormats.default(ajv);
  const compiled = new Map<string, ReturnType<typeof ajv.compile>>();
  const failures: string[] = [];
  for (const { where, value, schema } of examples) {
    const key = JSON.stringify(schema);
    let validate = compiled.get(key);
    if (!validate) compiled.set(key, (validate = ajv.compile(schema)));
    if (!validate(value)) failures.push(`${where}: ${JSON.stringify(value)} — ${ajv.errorsText(validate.errors)}`);
  }
  return failures;
}

describe('OpenAPI document: every example matches its own schema', function () {
  this.timeout(30_000);
  const doc = buildOpenApiDocument() as Json;
  const examples = examplesOf(doc);

  it('finds the examples of parameters, of error bodies and of schemas', () => {
    for (const kind of ['parameter', 'media', 'schema'] as const)
      expect(examples.filter((e) => e.kind === kind).length, kind).to.be.greaterThan(10);
    expect(examples.some((e) => e.where.startsWith('/webhooks/delivery/')), 'the delivery POST').to.equal(true);
  });

  it('each example satisfies its schema: required fields, types, formats, no undeclared field', () => {
    expect(invalidExamples(examples)).to.deep.equal([]);
  });

  it('refuses an example with an undeclared field, a wrong type or a missing field', () => {
    const schema = { type: 'object', properties: { id: { type: 'string' }, n: { type: 'integer' } }, required: ['id'], additionalProperties: false };
    const cases: Example[] = [
      { where: '/extra', kind: 'media', value: { id: 'a', other: 1 }, schema },
      { where: '/type', kind: 'media', value: { id: 'a', n: '1' }, schema },
      { where: '/missing', kind: 'media', value: { n: 1 }, schema },
      { where: '/format', kind: 'schema', value: 'yesterday', schema: { type: 'string', format: 'date-time' } },
    ];
    expect(invalidExamples(cases).map((f) => f.split(':')[0])).to.deep.equal(['/extra', '/type', '/missing', '/format']);
    expect(invalidExamples([{ where: '/ok', kind: 'media', value: { id: 'a', n: 1 }, schema }])).to.deep.equal([]);
  });

  it('an error example with a field its code does not carry is refused (the walk reaches them)', () => {
    const altered = structuredClone(doc) as any;
    const media = altered.paths['/auth/login'].post.responses['401'].content['application/json'];
    const code = Object.keys(media.examples)[0]!;
    media.examples[code].value = { ...media.examples[code].value, lockedUntil: 'not a field of a 401' };
    const before = new Set(invalidExamples(examples));
    const failures = invalidExamples(examplesOf(altered)).filter((f) => !before.has(f));
    expect(failures).to.have.length(1);
    expect(failures[0]).to.contain(`/paths/~1auth~1login/post/responses/401/content/application~1json/examples/${code}`);
  });
});
