import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import nodemailer from 'nodemailer';
import type { Logger } from '../log.js';

export interface Mail {
  to: string;
  subject: string;
  text: string;
  html: string;
}

export interface Mailer {
  send(mail: Mail): Promise<void>;
  /** Where mail goes, for the start-up banner. */
  readonly destination: string;
  close(): void;
}

/** Real delivery through SMTP_URL. */
export function smtpMailer(smtpUrl: string, from: string): Mailer {
  // Bounded waits: a mail server that stalls frees its queue slot after these, not nodemailer's
  // default ten minutes of socket silence.
  const transport = nodemailer.createTransport({ url: smtpUrl, connectionTimeout: 10_000, greetingTimeout: 10_000, socketTimeout: 30_000 });
  const safe = new URL(smtpUrl);
  safe.password = '';
  safe.username = '';
  return {
    destination: `SMTP ${safe.host}`,
    async send(mail) {
      await transport.sendMail({ from, ...mail });
    },
    close: () => transport.close(),
  };
}

/**
 * Development without SMTP: each e-mail is rendered as a real RFC 822 message into
 * `DATA_DIR/mail/*.eml` and announced in the log, so a newcomer can sign up with no mail server.
 */
export function devMailbox(dataDir: string, from: string, log: Logger, production: boolean): Mailer {
  const dir = path.resolve(dataDir, 'mail');
  const transport = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'unix' });
  let sequence = 0;
  return {
    destination: `dev mailbox ${dir}`,
    async send(mail) {
      const info = await transport.sendMail({ from, ...mail });
      // Written synchronously (a few KB to the page cache): fs/promises would queue the write on
      // libuv's thread pool behind password hashes, and mail would wait for every signup's hash.
      mkdirSync(dir, { recursive: true });
      const safeTo = mail.to.replace(/[^\w.@-]/g, '_');
      const file = path.join(dir, `${Date.now()}-${++sequence}-${safeTo}.eml`);
      writeFileSync(file, info.message as Buffer, { mode: 0o600 });
      // The subject carries the code: fine on a developer's machine, never in production logs.
      log.info({ mail: { to: mail.to, file, ...(production ? {} : { subjectLine: mail.subject }) } }, 'e-mail written to dev mailbox');
    },
    close: () => undefined,
  };
}
