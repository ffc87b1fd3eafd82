import type { AddressInfo } from 'node:net';
import { simpleParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';

export interface ReceivedMail {
  from: string;
  to: string[];
  subject: string;
  text: string;
  html: string;
}

/** A real SMTP server in the test process: walgate sends to it over TCP, tests read what arrived. */
export class TestSmtpServer {
  readonly messages: ReceivedMail[] = [];
  #waiters: Array<{ match: (m: ReceivedMail) => boolean; resolve: (m: ReceivedMail) => void }> = [];
  #server: SMTPServer;
  #port = 0;

  constructor() {
    this.#server = new SMTPServer({
      authOptional: true,
      disabledCommands: ['STARTTLS'],
      logger: false,
      onData: (stream, session, callback) => {
        simpleParser(stream)
          .then((parsed) => {
            const mail: ReceivedMail = {
              from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
              to: session.envelope.rcptTo.map((r) => r.address.toLowerCase()),
              subject: parsed.subject ?? '',
              text: parsed.text ?? '',
              html: typeof parsed.html === 'string' ? parsed.html : '',
            };
            this.messages.push(mail);
            this.#waiters = this.#waiters.filter((w) => {
              if (!w.match(mail)) return true;
              w.resolve(mail);
              return false;
            });
            callback();
          })
          .catch(callback);
      },
    });
  }

  async start(): Promise<void> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve));
    this.#port = (this.#server.server.address() as AddressInfo).port;
  }

  get url(): string {
    return `smtp://127.0.0.1:${this.#port}`;
  }

  /** Mails to this address so far. */
  to(address: string): ReceivedMail[] {
    return this.messages.filter((m) => m.to.includes(address.toLowerCase()));
  }

  /** The next mail to `address` that arrives after `after` mails to it have already been seen. */
  async waitFor(address: string, options: { after?: number; timeoutMs?: number } = {}): Promise<ReceivedMail> {
    const seen = options.after ?? 0;
    const existing = this.to(address);
    if (existing.length > seen) return existing[seen]!;
    let count = existing.length;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`no mail to ${address} within ${options.timeoutMs ?? 5000} ms`)),
        options.timeoutMs ?? 5000,
      );
      this.#waiters.push({
        match: (m) => m.to.includes(address.toLowerCase()) && ++count > seen,
        resolve: (m) => {
          clearTimeout(timer);
          resolve(m);
        },
      });
    });
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}

/** The 6-digit code in a walgate e-mail (it is in the subject and the body). */
export function codeIn(mail: ReceivedMail): string {
  const match = /\b(\d{6})\b/.exec(mail.subject) ?? /\b(\d{6})\b/.exec(mail.text);
  if (!match) throw new Error(`no code in mail "${mail.subject}"`);
  return match[1]!;
}
