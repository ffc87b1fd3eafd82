import { spawn, type ChildProcess } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { simpleParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';
import { freePort } from '../../src/core/db/embedded.js';
import { countQueuedMail } from '../../src/core/mail/outbox.js';
import type { TestApi } from '../support/api.js';
import { HttpClient } from '../support/http.js';
import { killDaemon } from '../tailer/support.js';
import { PASSWORD, startAuthApi, uniqueEmail } from './support.js';

// E-mail that is never lost: many signups against a mail server that answers slowly, then stops
// answering at all, while the api is SIGKILLed and started again. No signup is refused, and every
// confirmation e-mail arrives once the server is back — those queued in the killed process too.
//
// The size is scaled by COURIER_SIGNUPS and COURIER_OUTAGE_MS (defaults: 2,000 signups and a
// one-minute outage, as the must-show asks); the shape stays: slow server, outage, kill, all mail.

const TOTAL = Number(process.env.COURIER_SIGNUPS ?? 2000);
const OUTAGE_MS = Number(process.env.COURIER_OUTAGE_MS ?? 60_000);
const CONCURRENCY = 16;
const SMTP_DELAY_MS = 200;
const API_MAIN = fileURLToPath(new URL('../../src/main/api.cjs', import.meta.url));

/** A real SMTP server that takes `delayMs` per mail, and can go away and come back on its port. */
class SlowSmtp {
  readonly received = new Map<string, number>();
  #server: SMTPServer | undefined;
  port = 0;

  constructor(private readonly delayMs: number) {}

  async start(): Promise<void> {
    this.#server = new SMTPServer({
      authOptional: true,
      disabledCommands: ['STARTTLS'],
      logger: false,
      onData: (stream, session, callback) => {
        simpleParser(stream)
          .then(async () => {
            await sleep(this.delayMs);
            for (const r of session.envelope.rcptTo)
              this.received.set(r.address.toLowerCase(), (this.received.get(r.address.toLowerCase()) ?? 0) + 1);
            callback();
          })
          .catch(callback);
      },
    });
    await new Promise<void>((resolve) => this.#server!.listen(this.port, '127.0.0.1', resolve));
    this.port = (this.#server.server.address() as AddressInfo).port;
  }

  /** Refuses connections from now on (and drops the open ones) until start() again. */
  async stop(): Promise<void> {
    const server = this.#server!;
    // smtp-server waits for open sessions on close; drop them, as a crashed server would.
    for (const socket of (server as unknown as { connections: Set<{ _socket?: { destroy(): void } }> }).connections ?? [])
      socket._socket?.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  get url(): string {
    return `smtp://127.0.0.1:${this.port}`;
  }
}

/** A random public-looking client address: each signup from its own client, as in production (TRUST_PROXY=1). */
const randomIp = () => `203.0.${Math.floor(Math.random() * 256)}.${1 + Math.floor(Math.random() * 254)}`;

describe('auth: the courier never loses an e-mail', function () {
  this.timeout(Math.max(300_000, TOTAL * 150 + OUTAGE_MS * 3));
  let t: TestApi;
  let smtp: SlowSmtp;
  let api: ChildProcess | undefined;
  let apiUrl = '';

  const launchApi = async () => {
    const port = await freePort();
    apiUrl = `http://127.0.0.1:${port}`;
    api = spawn(process.execPath, [API_MAIN], {
      env: {
        ...process.env,
        NODE_ENV: 'test',
        DATABASE_URL: t.database.url,
        KEY_ENCRYPTION_KEY: t.config.keyEncryptionKey!.toString('base64'),
        DATA_DIR: t.config.dataDir,
        SMTP_URL: smtp.url,
        PORT: String(port),
        HOST: '127.0.0.1',
        TRUST_PROXY: '1',
        LOG_LEVEL: 'error',
        // Short enough that a mail server back after its outage sees the backlog within seconds.
        MAIL_RETRY_MAX_DELAY_MS: '3000',
        // With waits capped at 3 s, the default 12 tries span about 35 s: enough tries to outlast
        // the outage, as the defaults (waits up to 5 minutes) do for about 18 minutes.
        MAIL_MAX_ATTEMPTS: String(Math.ceil(OUTAGE_MS / 3000) + 20),
        MAIL_SEND_LEASE_MS: '10000',
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    api.stderr!.on('data', (d: Buffer) => process.stderr.write(d));
    const until = Date.now() + 30_000;
    for (;;) {
      const ok = await fetch(`${apiUrl}/healthz`).then(
        (r) => r.ok,
        () => false,
      );
      if (ok) return;
      if (Date.now() > until) throw new Error('the api did not start');
      await sleep(100);
    }
  };

  const killApi = () => killDaemon(api);

  before(async () => {
    smtp = new SlowSmtp(SMTP_DELAY_MS);
    await smtp.start();
    t = await startAuthApi({ env: { SMTP_URL: smtp.url } });
    // Only the spawned daemon sends: it is the process that gets killed.
    await t.ctx.courier.stop();
    await t.provision({ projectId: 'courier', name: 'master' });
  });
  after(async () => {
    await killApi().catch(() => undefined);
    await t.close();
    await smtp.stop().catch(() => undefined);
  });

  it(`${TOTAL} signups at ${CONCURRENCY} concurrent, a slow then stopped mail server and a SIGKILLed api: none refused, every e-mail arrives`, async () => {
    await launchApi();
    const emails = Array.from({ length: TOTAL }, () => uniqueEmail('courier'));
    const statuses = new Map<string, number>();
    let next = 0;
    let apiDown = false;

    /** One signup, sent again after a connection lost to the kill (409 then means the first one committed). */
    const signup = async (email: string) => {
      for (let attempt = 0; ; attempt++) {
        while (apiDown) await sleep(50);
        const http = new HttpClient(apiUrl, { 'x-project-id': 'courier', 'x-forwarded-for': randomIp() });
        try {
          const r = await http.post('/auth/signup', { email, password: PASSWORD }, { timeoutMs: 30_000 });
          statuses.set(email, r.status === 409 && attempt > 0 ? 201 : r.status);
          return;
        } catch {
          await sleep(100);
        }
      }
    };
    const clients = Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < TOTAL) await signup(emails[next++]!);
      }),
    );

    // The slow phase: a quarter of the signups while the server takes 200 ms a mail.
    while (next < TOTAL / 4) await sleep(50);
    await smtp.stop();
    const outageStarted = Date.now();
    // The outage: the api is SIGKILLed with mail queued, and started again.
    while (next < TOTAL / 2) await sleep(50);
    const queuedAtKill = await countQueuedMail(t.ctx.pool);
    apiDown = true;
    await killApi();
    await launchApi();
    apiDown = false;
    await clients;
    const refused = [...statuses].filter(([, s]) => s !== 201);
    expect(refused, 'signups answered otherwise than 201').to.deep.equal([]);
    expect(statuses.size).to.equal(TOTAL);
    expect(queuedAtKill, 'mail queued when the api was killed').to.be.greaterThan(0);

    await sleep(Math.max(0, OUTAGE_MS - (Date.now() - outageStarted)));
    const receivedBeforeBack = smtp.received.size;
    await smtp.start();
    const until = Date.now() + Math.max(120_000, TOTAL * 100);
    while (emails.some((e) => !smtp.received.has(e))) {
      if (Date.now() > until) {
        const missing = emails.filter((e) => !smtp.received.has(e));
        throw new Error(`${missing.length} of ${TOTAL} e-mails never arrived (queued: ${await countQueuedMail(t.ctx.pool)})`);
      }
      await sleep(250);
    }
    expect(receivedBeforeBack, 'mail sent before the outage').to.be.greaterThan(0);
    expect(receivedBeforeBack, 'mail waiting for the server').to.be.lessThan(TOTAL);
    const { rows } = await t.ctx.pool.query(
      `SELECT state, count(*)::int AS n, count(message)::int AS with_message FROM walgate.mail_outbox GROUP BY state`,
    );
    expect(rows).to.deep.equal([{ state: 'sent', n: TOTAL, with_message: 0 }]);
    console.log(`      ${TOTAL} signups, ${queuedAtKill} mails queued at the kill, ${TOTAL - receivedBeforeBack} sent after the outage`);
  });
});
