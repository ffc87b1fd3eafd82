// The floor of WAL → delivered (issue 30): the least a Node process can do for walgate's output.
// It reads pgoutput from a slot of its own (pg-logical-replication, as walgate does), builds the
// seed payload of each change, signs it both ways, POSTs it with undici (32 requests in flight
// per subscription, as walgate's cap) to the bench's receiver, and acknowledges each transaction
// once all its deliveries are answered. Nothing durable: no history, no retry queue, no breaker,
// no ordering, no metrics. Driven by the bench over IPC (floor.ts).
import { LogicalReplicationService, PgoutputPlugin, type Pgoutput } from 'pg-logical-replication';
import { Pool } from 'undici';
import { seedBody, seedHeaders, type SeedChange } from './seed-delivery.js';

const CONCURRENCY = 32;
const ATTEMPTS = 5;
const secret = process.env.BENCH_SECRET!;
const ca = process.env.BENCH_CA!;

interface Transaction {
  endLsn: string | null;
  pending: number;
}

interface Delivery {
  tx: Transaction;
  change: SeedChange;
  body: string;
}

/** One subscription: its URL, its connection pool, its queue and its in-flight count. */
class Target {
  readonly queue: Delivery[] = [];
  #head = 0;
  inFlight = 0;
  readonly pool: Pool;
  readonly path: string;
  constructor(url: string, readonly done: (d: Delivery, err?: Error) => void) {
    const u = new URL(url);
    this.path = u.pathname;
    this.pool = new Pool(u.origin, { connections: CONCURRENCY, connect: { ca } });
  }

  push(d: Delivery): void {
    this.queue.push(d);
    this.pump();
  }

  pump(): void {
    while (this.inFlight < CONCURRENCY && this.#head < this.queue.length) {
      const d = this.queue[this.#head++]!;
      if (this.#head > 4096) {
        this.queue.splice(0, this.#head);
        this.#head = 0;
      }
      this.inFlight++;
      void this.#send(d).then(
        () => this.#settle(d),
        (err: Error) => this.#settle(d, err),
      );
    }
  }

  #settle(d: Delivery, err?: Error): void {
    this.inFlight--;
    this.done(d, err);
    this.pump();
  }

  async #send(d: Delivery): Promise<void> {
    const headers = seedHeaders(secret, d.change, d.body);
    // Sent again at once on a failure (a keep-alive connection the receiver closed as the request
    // went out is the usual one): at-least-once, as walgate, without its retry queue.
    for (let attempt = 1; ; attempt++) {
      try {
        const res = await this.pool.request({ method: 'POST', path: this.path, headers, body: d.body });
        await res.body.dump();
        if (res.statusCode >= 200 && res.statusCode < 300) return;
        if (attempt >= ATTEMPTS) throw new Error(`the receiver answered ${res.statusCode}`);
      } catch (err) {
        if (attempt >= ATTEMPTS) throw err;
      }
    }
  }
}

let service: LogicalReplicationService | undefined;
let targets: Target[] = [];
const open: Transaction[] = [];
let current: Transaction | undefined;
let index = 0;
let delivered = 0;
let failed: string | undefined;
let at = new Date();
/** The last position acknowledged: repeated to answer the server's keepalives. */
let acked = '0/0';

function settle(d: Delivery, err?: Error): void {
  if (err) failed ??= err.message;
  delivered++;
  d.tx.pending--;
  acknowledge();
}

/** Acknowledges the end of the longest prefix of committed transactions with every delivery answered. */
function acknowledge(): void {
  let ack: string | undefined;
  while (open.length > 0 && open[0]!.endLsn !== null && open[0]!.pending === 0) ack = open.shift()!.endLsn!;
  if (ack) {
    acked = ack;
    void service?.acknowledge(ack).catch(() => undefined);
  }
}

function onData(lsn: string, msg: Pgoutput.Message): void {
  switch (msg.tag) {
    case 'begin':
      current = { endLsn: null, pending: 0 };
      open.push(current);
      index = 0;
      at = new Date(Number(msg.commitTime.valueOf() as bigint) / 1000);
      break;
    case 'insert': {
      const change: SeedChange = {
        eventId: `evt_${lsn}_${index++}`,
        at,
        table: msg.relation.name,
        operation: 'INSERT',
        recordJson: JSON.stringify(msg.new),
      };
      const body = seedBody(change);
      for (const t of targets) {
        current!.pending++;
        t.push({ tx: current!, change, body });
      }
      break;
    }
    case 'commit':
      current!.endLsn = msg.commitEndLsn;
      acknowledge(); // settles at once when it has nothing to deliver
      break;
  }
}

async function start(slot: string, publication: string, urls: string[]): Promise<void> {
  targets = urls.map((u) => new Target(u, settle));
  service = new LogicalReplicationService({ connectionString: process.env.BENCH_DATABASE_URL! }, { acknowledge: { auto: false, timeoutSeconds: 0 } });
  service.on('data', onData);
  service.on('error', (err: Error) => (failed ??= err.message));
  // Answer the server's keepalives (automatic acknowledgement is off, so the library does not):
  // an idle reader that never answers is cut off at wal_sender_timeout. With nothing open, all
  // up to the keepalive's position is handled (as walgate's tailer reports it).
  service.on('heartbeat', (lsn: string, _time: number, shouldRespond: boolean) => {
    if (open.length === 0) acked = lsn;
    if (shouldRespond) void service?.acknowledge(acked).catch(() => undefined);
  });
  const plugin = new PgoutputPlugin({ protoVersion: 1, publicationNames: [publication] });
  void service.subscribe(plugin, slot).catch((err: Error) => (failed ??= err.message));
}

process.on('message', (m: { cmd: string; seq: number; slot?: string; publication?: string; urls?: string[] }) => {
  void (async () => {
    if (m.cmd === 'start') await start(m.slot!, m.publication!, m.urls!);
    if (m.cmd === 'stop') {
      await service?.stop().catch(() => undefined);
      await Promise.all(targets.map((t) => t.pool.close()));
    }
    process.send!({ seq: m.seq, delivered, failed: failed ?? null });
  })();
});
