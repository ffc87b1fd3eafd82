import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { buildOpenApiDocument } from '../../src/docs/openapi.js';
import { ROOT } from '../support/shell-session.js';

// The answers the pages show next to their commands (`# {…}` or `# → 201 {…}` after a curl line,
// and the README's delivery) against the OpenAPI document: every field an example shows is a field
// of the documented schema, and every field the schema requires is in the example — so a page
// cannot show a field the API does not send, nor leave out one it always sends. Values are
// placeholders (`…`), so only the fields are compared, not their types.

type Json = Record<string, any>;
const doc = buildOpenApiDocument() as Json;

interface ShownAnswer {
  where: string;
  method: string;
  path: string; // as in the document: /auth/mfa/totp/enroll
  example: unknown;
}

/** A page's placeholders made JSON: `[…, …]` tails dropped. */
const parse = (text: string): unknown => JSON.parse(text.replace(/,\s*…\s*\]/g, ']'));

/** The documented path of a command line's URL: `$API/auth/login` → `/auth/login`. */
function commandOperation(line: string): { method: string; path: string } | undefined {
  const url = /\$\w+(\/(?:auth|api)\/[^\s"'?]*)/.exec(line)?.[1];
  if (!url) return undefined;
  const method = /-X (\w+)/.exec(line)?.[1] ?? (/\s-d\s/.test(line) ? 'POST' : 'GET');
  return { method: method.toLowerCase(), path: url };
}

function shownAnswers(file: string): ShownAnswer[] {
  const lines = readFileSync(path.join(ROOT, file), 'utf8').split('\n');
  const found: ShownAnswer[] = [];
  let command: { method: string; path: string } | undefined;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (!line.startsWith('#')) {
      command = commandOperation(line) ?? command;
      continue;
    }
    const start = /^#\s*(?:→\s*\d{3}\s*)?(\{.*)$/.exec(line);
    if (!start || !command) continue;
    // An example may go on over the following comment lines.
    let text = start[1]!;
    for (let j = i + 1; !isComplete(text) && lines[j]?.startsWith('#'); j++) text += lines[j]!.replace(/^#\s*/, '');
    found.push({ where: `${file}:${i + 1}`, ...command, example: parse(text) });
  }
  return found;
}

function isComplete(text: string): boolean {
  try {
    parse(text);
    return true;
  } catch {
    return false;
  }
}

/** The JSON kind a schema variant describes, as `typeof` names it. */
function kindOf(schema: Json): string {
  if (schema.properties || schema.type === 'object') return 'object';
  if (schema.items || schema.type === 'array') return 'array';
  if (schema.type === 'integer') return 'number';
  return String(schema.type);
}

/** Differences of field names between an example and a schema, recursively. */
function fieldDifferences(example: unknown, schema: Json, at: string): string[] {
  const variants: Json[] | undefined = schema.anyOf ?? schema.oneOf;
  if (variants) {
    // The example shows one of the forms (a token pair, or the MFA step): the closest one of its
    // kind — a `null` variant has no fields, and must not hide the differences of an object.
    const ofKind = variants.filter((v) => kindOf(v) === (example === null ? 'null' : Array.isArray(example) ? 'array' : typeof example));
    return (ofKind.length ? ofKind : variants).map((v) => fieldDifferences(example, v, at)).sort((a, b) => a.length - b.length)[0]!;
  }
  if (Array.isArray(example) && schema.items) return example.flatMap((item, i) => fieldDifferences(item, schema.items, `${at}[${i}]`));
  if (typeof example !== 'object' || example === null || !schema.properties) return [];
  const shown = example as Json;
  // A page's `"…": "…"` (or `"...": "as above"`) stands for the fields it leaves out.
  const abridged = '…' in shown || '...' in shown;
  const out: string[] = [];
  for (const name of Object.keys(shown)) {
    if (name === '…' || name === '...') continue;
    if (!(name in schema.properties)) out.push(`${at}.${name} is shown but not in the schema`);
    else out.push(...fieldDifferences(shown[name], schema.properties[name], `${at}.${name}`));
  }
  if (!abridged) for (const name of schema.required ?? []) if (!(name in shown)) out.push(`${at}.${name} is always sent but not shown`);
  return out;
}

function successSchema(method: string, documentPath: string): Json {
  const operation = doc.paths[documentPath]?.[method];
  expect(operation, `${method.toUpperCase()} ${documentPath} is in the document`).to.exist;
  const [status] = Object.keys(operation.responses).filter((s) => s.startsWith('2'));
  return operation.responses[status!].content['application/json'].schema;
}

const responseSchema = (method: string, documentPath: string) => successSchema(method, documentPath);
const deliveryBody = () => doc.webhooks.delivery.post.requestBody.content['application/json'].schema as Json;

/** JSON blocks of the pages that show what walgate sends, each found by the line before it. */
const JSON_BLOCKS: Array<{ file: string; after: RegExp; schema: () => Json }> = [
  { file: 'README.md', after: /the receiver prints the delivery:$/, schema: deliveryBody },
  { file: 'docs/webhooks.md', after: /^bytes on every attempt:$/, schema: deliveryBody },
  { file: 'docs/schema-changes.md', after: /and one for `b`\):$/, schema: deliveryBody },
  { file: 'docs/outbox.md', after: /header is `INSERT`:$/, schema: deliveryBody },
  { file: 'docs/admin-api.md', after: /^### The user object$/, schema: () => responseSchema('get', '/api/rest/_users/{id}').properties.user },
  { file: 'docs/admin-api.md', after: /^`GET \/api\/rest\/_users\/\{id\}` answers$/, schema: () => responseSchema('get', '/api/rest/_users/{id}') },
  { file: 'docs/delivery-log.md', after: /^\| `responseHeaders` \|/, schema: () => responseSchema('get', '/api/rest/_webhooks/{id}/deliveries/{deliveryId}') },
];

/** The ```json block whose nearest non-empty line before it matches `after`. */
function jsonBlockAfter(file: string, after: RegExp): string {
  const lines = readFileSync(path.join(ROOT, file), 'utf8').split('\n');
  for (let i = 0; i < lines.length; i++) {
    if (lines[i] !== '```json') continue;
    let j = i - 1;
    while (j >= 0 && !lines[j]!.trim()) j--;
    if (j >= 0 && after.test(lines[j]!)) return lines.slice(i + 1, lines.indexOf('```', i + 1)).join('\n');
  }
  throw new Error(`${file}: no json block after ${after}`);
}

describe('docs: the answers the pages show have the fields the API documents', () => {
  const PAGES = ['README.md', ...readdirSync(path.join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
  const answers = PAGES.flatMap(shownAnswers);

  it('finds the answers shown after commands', () => {
    expect(answers.map((a) => `${a.where.split(':')[0]} ${a.method.toUpperCase()} ${a.path}`)).to.deep.equal([
      'docs/authentication.md POST /auth/signup',
      'docs/mfa.md POST /auth/mfa/totp/enroll',
      'docs/mfa.md POST /auth/mfa/totp/verify',
      'docs/mfa.md POST /auth/login',
      'docs/mfa.md POST /auth/mfa/challenge',
    ]);
  });

  it('each shows the fields of its documented success answer, no more and none fewer', () => {
    const problems = answers.flatMap((a) =>
      fieldDifferences(a.example, successSchema(a.method, a.path), '').map((p) => `${a.where} (${a.method.toUpperCase()} ${a.path}): ${p}`),
    );
    expect(problems).to.deep.equal([]);
  });

  it('the JSON blocks that show a delivery or an answer have its documented fields', () => {
    const problems = JSON_BLOCKS.flatMap(({ file, after, schema }) =>
      fieldDifferences(parse(jsonBlockAfter(file, after)), schema(), '').map((p) => `${file} (after ${after}): ${p}`),
    );
    expect(problems).to.deep.equal([]);
  });

  it('tells a field too many, and one missing (the comparison is not vacuous)', () => {
    const schema = { type: 'object', properties: { a: { type: 'string' }, b: { type: 'string' } }, required: ['a', 'b'] };
    expect(fieldDifferences({ a: '…', c: 1 }, schema, '')).to.deep.equal(['.c is shown but not in the schema', '.b is always sent but not shown']);
    // …also under a nullable object, and not when the page says it left fields out.
    expect(fieldDifferences({ x: { a: '…' } }, { properties: { x: { anyOf: [schema, { type: 'null' }] } } }, '')).to.deep.equal(['.x.b is always sent but not shown']);
    expect(fieldDifferences({ a: '…', '…': '…' }, schema, '')).to.deep.equal([]);
  });
});
