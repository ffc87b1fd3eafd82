import { connect, type Socket } from 'node:net';
import { expect } from 'chai';
import { createApiApp } from '../../src/main/api-app.js';
import { startAuthApi } from '../auth/support.js';
import type { TestApi } from '../support/api.js';
import type { HttpClient } from '../support/http.js';
import { registeredRoutes } from '../support/routes.js';

// Issue 36, finding 4: `POST /graphql` with the JSON body `null` was never answered (graphql-http
// waited for a body stream body-parser had already read), and nothing bounded a request whose
// client stops sending. Every valid-JSON body that is not an object is a 400 on every route, and
// the api has hard deadlines for a request's headers and body (API_HEADERS_TIMEOUT_MS,
// API_REQUEST_TIMEOUT_MS; short ones here).

const NOT_OBJECTS = ['null', 'false', '0', '""', '[]'];
const HEADERS_DEADLINE_MS = 800;
const REQUEST_DEADLINE_MS = 1500;

describe('reliability: no request hangs', function () {
  this.timeout(120_000);
  let t: TestApi;
  let http: HttpClient;

  before(async () => {
    t = await startAuthApi({
      env: { API_HEADERS_TIMEOUT_MS: String(HEADERS_DEADLINE_MS), API_REQUEST_TIMEOUT_MS: String(REQUEST_DEADLINE_MS) },
    });
    ({ http } = await t.provision({ projectId: 'hang', name: 'master' }));
  });
  after(() => t.close());

  it(`bodies ${NOT_OBJECTS.join(', ')} to /graphql: 400 within 1 s each`, async () => {
    for (const raw of NOT_OBJECTS) {
      const started = Date.now();
      const res = await http.post('/graphql', undefined, { raw, headers: { 'content-type': 'application/json' }, timeoutMs: 5000 });
      expect(Date.now() - started, raw).to.be.below(1000);
      expect(res.status, `${raw}: ${JSON.stringify(res.body)}`).to.equal(400);
      expect(res.body.error, raw).to.equal('VALIDATION_ERROR');
    }
  });

  it('the same bodies to every route of the api (every method but GET, path parameters filled in): 400 within 1 s', async () => {
    const routes = registeredRoutes(createApiApp(t.ctx)).filter((r) => r.method !== 'get');
    expect(routes.length).to.be.above(30);
    const filled = (path: string) => path.replace(/:[A-Za-z]+/g, '00000000-0000-0000-0000-000000000000');
    for (const route of routes) {
      const method = route.method === '*' ? 'POST' : route.method.toUpperCase();
      for (const raw of NOT_OBJECTS) {
        const started = Date.now();
        const res = await http.request(method, filled(route.path), {
          raw,
          headers: { 'content-type': 'application/json' },
          timeoutMs: 5000,
        });
        const label = `${method} ${route.path} ${raw}`;
        expect(Date.now() - started, label).to.be.below(1000);
        expect(res.status, `${label}: ${JSON.stringify(res.body)}`).to.equal(400);
        expect(res.body.error, label).to.equal('VALIDATION_ERROR');
      }
    }
  });

  it('GraphQL requests that are not GraphQL (no query, variables not an object): 400 GRAPHQL_BAD_REQUEST, logged at info, no stack', async () => {
    const linesBefore = t.logs.lines.length;
    for (const body of [{}, { query: 1 }, { query: '{ __typename }', variables: 'x' }]) {
      const res = await http.post('/graphql', body);
      expect(res.status, JSON.stringify(res.body)).to.equal(400);
      expect(res.body.errors[0].extensions.code).to.equal('GRAPHQL_BAD_REQUEST');
    }
    const logged = t.logs.lines.slice(linesBefore).map((l) => JSON.parse(l) as { level: number; msg: string; err?: unknown });
    expect(logged.filter((l) => l.level > 30)).to.deep.equal([]);
    expect(logged.filter((l) => l.msg === 'graphql request refused')).to.have.length(3);
  });

  /** Opens a socket, writes `sent`, then nothing: resolves with what the server answered and when it closed the socket. */
  function stallingClient(sent: string): Promise<{ answer: string; closedAfterMs: number }> {
    return new Promise((resolve, reject) => {
      const url = new URL(t.url);
      const socket: Socket = connect(Number(url.port), url.hostname);
      const chunks: Buffer[] = [];
      let started = 0;
      socket.on('connect', () => {
        started = Date.now();
        socket.write(sent);
      });
      socket.on('data', (c) => chunks.push(c));
      socket.on('error', () => undefined); // a reset is a cut too
      socket.on('close', () => resolve({ answer: Buffer.concat(chunks).toString('utf8'), closedAfterMs: Date.now() - started }));
      setTimeout(() => {
        socket.destroy();
        reject(new Error('the server kept the stalled request open for 20 s'));
      }, 20_000).unref();
    });
  }

  it('a client that sends half a body and stops is answered 408 REQUEST_TIMEOUT and cut off at the request deadline', async () => {
    const head =
      `POST /auth/login HTTP/1.1\r\nHost: x\r\nX-Project-Id: hang\r\nContent-Type: application/json\r\n` + `Content-Length: 100\r\n\r\n`;
    const { answer, closedAfterMs } = await stallingClient(`${head}{"email": "a@b.c`);
    expect(answer).to.match(/^HTTP\/1\.1 408 /);
    expect(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4))).to.include({ error: 'REQUEST_TIMEOUT' });
    // Not before the deadline; after it by at most the check interval (a tenth of the headers deadline) and a loaded machine's slack.
    expect(closedAfterMs).to.be.at.least(REQUEST_DEADLINE_MS - 50);
    expect(closedAfterMs).to.be.below(REQUEST_DEADLINE_MS + 5000);
  });

  it('a client that sends half its headers and stops is cut off at the headers deadline', async () => {
    const { answer, closedAfterMs } = await stallingClient('POST /graphql HTTP/1.1\r\nHost: x\r\nContent-Ty');
    expect(answer).to.match(/^HTTP\/1\.1 408 /);
    expect(closedAfterMs).to.be.at.least(HEADERS_DEADLINE_MS - 50);
    expect(closedAfterMs).to.be.below(REQUEST_DEADLINE_MS + 5000);
  });

  it('a request that takes its time but arrives within the deadline is served', async () => {
    const res = await http.post('/auth/login', { email: 'slow@example.com', password: 'not the password at all' });
    expect(res.status).to.equal(401);
  });
});
