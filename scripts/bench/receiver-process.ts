// The benchmark's subscriber, in a process of its own: an HTTPS server that checks every
// delivery's signature and counts event ids, so a fast wrong answer cannot pass.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';

const secret = process.env.BENCH_SECRET!;
// The certificate the parent made with its test CA (the sender trusts that CA).
const { cert, key } = JSON.parse(process.env.BENCH_TLS!) as { cert: string; key: string };
let received = 0;
/** Requests counted (a batch is one request carrying several of `received`). */
let requests = 0;
let badSignatures = 0;
let ids = new Set<string>();
let latencies: number[] = [];
let recordLatency = false;
/** Only requests under these paths are counted (deliveries of earlier steps may still arrive). */
let counted: string[] = [];
/** Requests under these paths answer 503 and are not counted: an endpoint that is down. */
let down: string[] = [];
/** Per row (`record.id`), the highest `record.version` received; a lower one after it is a regression. */
let versions = new Map<string, number>();
let regressions = 0;
/** The versions every row must reach (the table when the outage ended): rows short of theirs are behind. */
let target = new Map<string, number>();

const server = createServer({ cert, key }, (req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks);
    const expected = createHmac('sha256', secret).update(body).digest();
    const given = Buffer.from(String(req.headers['x-webhook-signature'] ?? ''), 'hex');
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
      badSignatures++;
      res.writeHead(401, { 'content-length': '0' }).end();
      return;
    }
    type Event = { id: string; timestamp: string; record?: { id?: unknown; version?: unknown } };
    const parsed = JSON.parse(body.toString('utf8')) as Event | { events: Event[] };
    // A batched subscription's request carries {"events": [...]}: each event counts as a delivery.
    const events = 'events' in parsed ? parsed.events : [parsed];
    if (down.some((p) => req.url?.startsWith(p))) {
      res.writeHead(503, { 'content-length': '0' }).end();
      return;
    }
    // Paths under /hang never answer: a noisy neighbour's stuck endpoint (the sender times out).
    if (req.url?.startsWith('/hang')) return;
    // Paths under /slow answer after 50 ms: a receiver whose latency, not its CPU, bounds the rate.
    if (req.url?.startsWith('/slow')) setTimeout(() => res.writeHead(200, { 'content-length': '2' }).end('ok'), 50);
    else res.writeHead(200, { 'content-length': '2' }).end('ok');
    if (!counted.some((p) => req.url?.startsWith(p))) return;
    requests++;
    for (const event of events) {
      received++;
      ids.add(`${req.url} ${event.id}`);
      if (recordLatency) latencies.push(Date.now() - Date.parse(event.timestamp));
      if (typeof event.record?.version === 'number') {
        const row = `${req.url} ${String(event.record.id)}`;
        const seen = versions.get(row) ?? -1;
        if (event.record.version < seen) regressions++;
        else versions.set(row, event.record.version);
      }
    }
  });
});
server.on('secureConnection', (s) => s.setNoDelay(true));
server.listen(0, '127.0.0.1', () => {
  process.send!({ port: (server.address() as AddressInfo).port });
});

/** Rows whose highest version received is short of the target. */
function behind(): number {
  let n = 0;
  for (const [row, v] of target) if ((versions.get(row) ?? -1) < v) n++;
  return n;
}

process.on('message', (m: { cmd: string; paths?: string[]; seq: number; target?: Array<[string, number]> }) => {
  if (m.cmd === 'reset') {
    received = 0;
    requests = 0;
    badSignatures = 0;
    ids = new Set();
    latencies = [];
    recordLatency = false;
    counted = m.paths ?? [];
    versions = new Map();
    regressions = 0;
    target = new Map();
  }
  if (m.cmd === 'down') down = m.paths ?? [];
  if (m.cmd === 'target') target = new Map(m.target);
  if (m.cmd === 'latency') recordLatency = true;
  process.send!({ seq: m.seq, received, requests, unique: ids.size, badSignatures, latencies: recordLatency ? latencies : [], regressions, behind: behind() });
});
