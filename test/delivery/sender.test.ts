import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { Sender } from '../../src/delivery/sender.js';
import { testCertificates } from '../support/tls.js';

// The sender on its own against a real HTTPS receiver: what an attempt reports for the answers
// that are not a plain 2xx, and that the time-out bounds every attempt, also one still waiting
// for a connection.

describe('delivery: the sender (one POST, bounded)', function () {
  this.timeout(20_000);
  let server: Server;
  let base: string;
  let sender: Sender;
  let answer: (req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse) => void;

  before(async () => {
    const { ca, cert, key } = await testCertificates();
    server = createServer({ cert, key }, (req, res) => {
      req.resume();
      req.on('end', () => answer(req, res));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
    sender = new Sender({ timeoutMs: 400, allowPrivateNetworks: true, connectionsPerEndpoint: 2, tls: { ca } });
  });
  after(async () => {
    await sender.close();
    server.closeAllConnections();
    server.close();
  });

  it('a 2xx with a long answer: delivered, its first KiB kept (NUL made printable), the rest not read past 64 KiB', async () => {
    answer = (_req, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end(`ok\u0000${'y'.repeat(200 * 1024)}`);
    const r = await sender.post('endpoint', new URL(`${base}/long`), { 'x-test': '1' }, '{}');
    expect(r).to.include({ ok: true, status: 200, error: null });
    expect(r.responseBody).to.have.length(1024);
    expect(r.responseBody!.startsWith('ok\uFFFDyyy')).to.equal(true);
  });

  it('a non-2xx answer that breaks off mid-body: its status stands, with what arrived', async () => {
    answer = (_req, res) => {
      res.writeHead(500, { 'content-length': '1000' });
      res.write('partial');
      setTimeout(() => res.destroy(), 20);
    };
    const r = await sender.post('endpoint', new URL(`${base}/broken`), {}, '{}');
    expect(r).to.include({ ok: false, status: 500, error: 'HTTP 500' });
    expect(r.responseBody).to.equal('partial');
  });

  it('Retry-After is reported as given', async () => {
    answer = (_req, res) => res.writeHead(503, { 'retry-after': '7' }).end();
    const r = await sender.post('endpoint', new URL(`${base}/busy`), {}, '{}');
    expect(r).to.include({ ok: false, status: 503, retryAfter: '7' });
  });

  it('no answer: the time-out counts from the send — requests queued for one of the 2 connections are not charged the wait', async () => {
    answer = () => undefined; // never answers
    const started = Date.now();
    const results = await Promise.all(Array.from({ length: 6 }, () => sender.post('endpoint', new URL(`${base}/hang`), {}, '{}')));
    const took = Date.now() - started;
    for (const r of results) {
      expect(r).to.include({ ok: false, status: null, error: 'no answer within 400 ms' });
      // Each one's own 400 ms from its send, not the turns it waited for a connection.
      expect(r.durationMs).to.be.within(390, 1000);
    }
    expect(took, 'three turns of two connections').to.be.at.least(3 * 390);
    // The connections were aborted: the sender answers again at once.
    answer = (_req, res) => res.writeHead(204).end();
    const r = await sender.post('endpoint', new URL(`${base}/after`), {}, '{}');
    expect(r).to.include({ ok: true, status: 204 });
  });

  it('each endpoint has its own pool: one endpoint’s hanging requests never queue another’s on the same origin', async () => {
    answer = (req, res) => (req.url === '/hang' ? undefined : res.writeHead(204).end());
    const stuck = Array.from({ length: 4 }, () => sender.post('stuck-endpoint', new URL(`${base}/hang`), {}, '{}'));
    await new Promise((r) => setTimeout(r, 50)); // its 2 connections are taken, 2 more wait for them
    const started = Date.now();
    const r = await sender.post('other-endpoint', new URL(`${base}/ok`), {}, '{}');
    expect(r).to.include({ ok: true, status: 204 });
    expect(Date.now() - started, 'not behind the stuck endpoint’s time-outs').to.be.below(390);
    await Promise.all(stuck);
  });
});
