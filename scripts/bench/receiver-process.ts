// The benchmark's subscriber, in a process of its own: an HTTPS server that checks every
// delivery's signature and counts event ids, so a fast wrong answer cannot pass.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';

const secret = process.env.BENCH_SECRET!;
// The certificate the parent made with its test CA (the sender trusts that CA).
const { cert, key } = JSON.parse(process.env.BENCH_TLS!) as { cert: string; key: string };
let received = 0;
let badSignatures = 0;
let ids = new Set<string>();
let latencies: number[] = [];
let recordLatency = false;
/** Only requests under these paths are counted (deliveries of earlier steps may still arrive). */
let counted: string[] = [];

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
    const event = JSON.parse(body.toString('utf8')) as { id: string; timestamp: string };
    // Paths under /hang never answer: a noisy neighbour's stuck endpoint (the sender times out).
    if (req.url?.startsWith('/hang')) return;
    // Paths under /slow answer after 50 ms: a receiver whose latency, not its CPU, bounds the rate.
    if (req.url?.startsWith('/slow')) setTimeout(() => res.writeHead(200, { 'content-length': '2' }).end('ok'), 50);
    else res.writeHead(200, { 'content-length': '2' }).end('ok');
    if (!counted.some((p) => req.url?.startsWith(p))) return;
    received++;
    ids.add(`${req.url} ${event.id}`);
    if (recordLatency) latencies.push(Date.now() - Date.parse(event.timestamp));
  });
});
server.on('secureConnection', (s) => s.setNoDelay(true));
server.listen(0, '127.0.0.1', () => {
  process.send!({ port: (server.address() as AddressInfo).port });
});

process.on('message', (m: { cmd: string; paths?: string[]; seq: number }) => {
  if (m.cmd === 'reset') {
    received = 0;
    badSignatures = 0;
    ids = new Set();
    latencies = [];
    recordLatency = false;
    counted = m.paths ?? [];
  }
  if (m.cmd === 'latency') recordLatency = true;
  process.send!({ seq: m.seq, received, unique: ids.size, badSignatures, latencies: recordLatency ? latencies : [] });
});
