import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { expect } from 'chai';
import type { HttpClient, HttpResponse, RequestOptions } from './http.js';

// Calls the api by operationId, as a client generated from /openapi.json would, and checks every
// answer against the document: its status must be documented for that operation, its body must
// match the documented schema (responses are documented without additional properties, so an
// undocumented field fails too), and documented headers must be there.

type Json = Record<string, any>;

export interface DocumentedOperation {
  id: string;
  method: string;
  path: string;
  operation: Json;
}

export function documentedOperations(doc: Json): DocumentedOperation[] {
  const out: DocumentedOperation[] = [];
  for (const [path, item] of Object.entries(doc.paths as Json)) {
    for (const [method, operation] of Object.entries(item as Json)) out.push({ id: operation.operationId, method, path, operation });
  }
  return out;
}

export interface CallOptions extends RequestOptions {
  params?: Record<string, string>;
  query?: Record<string, string>;
}

export class ContractClient {
  /** Statuses seen per operationId. */
  readonly seen = new Map<string, Set<number>>();
  readonly #operations: Map<string, DocumentedOperation>;
  readonly #ajv = new Ajv2020.default({ allErrors: true, strict: true, allowUnionTypes: true });
  readonly #validators = new Map<string, ReturnType<Ajv2020.default['compile']>>();

  constructor(
    readonly doc: Json,
    readonly http: HttpClient,
  ) {
    addFormats.default(this.#ajv);
    this.#operations = new Map(documentedOperations(doc).map((o) => [o.id, o]));
  }

  operation(id: string): DocumentedOperation {
    const op = this.#operations.get(id);
    if (!op) throw new Error(`no operation ${id} in the document`);
    return op;
  }

  /** The URL path of an operation, with its path parameters filled in. */
  url(id: string, params: Record<string, string> = {}, query?: Record<string, string>): string {
    const path = this.operation(id).path.replace(/\{(\w+)\}/g, (_, name: string) => {
      if (params[name] === undefined) throw new Error(`${id} needs the path parameter ${name}`);
      return encodeURIComponent(params[name]!);
    });
    return query ? `${path}?${new URLSearchParams(query)}` : path;
  }

  async call(id: string, options: CallOptions = {}): Promise<HttpResponse> {
    const { params, query, ...request } = options;
    const op = this.operation(id);
    const res = await this.http.request(op.method.toUpperCase(), this.url(id, params, query), request);
    this.verify(op, res);
    return res;
  }

  verify(op: DocumentedOperation, res: HttpResponse): void {
    const where = `${op.method.toUpperCase()} ${op.path} (${op.id}) answered ${res.status} ${res.text.slice(0, 300)}`;
    const documented = op.operation.responses[String(res.status)] as Json | undefined;
    expect(documented, `${where}: that status is not in the document`).to.exist;
    for (const name of Object.keys(documented!.headers ?? {})) {
      expect(res.headers.get(name), `${where}: documented header ${name} is missing`).to.be.a('string');
    }
    const media = documented!.content?.['application/json'] as Json | undefined;
    if (!media) {
      expect(res.text, `${where}: documented without a body`).to.equal('');
    } else {
      expect(res.headers.get('content-type'), where).to.match(/^application\/json/);
      const key = `${op.id} ${res.status}`;
      let validate = this.#validators.get(key);
      if (!validate) this.#validators.set(key, (validate = this.#ajv.compile(media.schema)));
      expect(validate(res.body), `${where}: does not match the documented schema: ${this.#ajv.errorsText(validate.errors)}`).to.equal(true);
    }
    const statuses = this.seen.get(op.id) ?? new Set<number>();
    statuses.add(res.status);
    this.seen.set(op.id, statuses);
  }
}
