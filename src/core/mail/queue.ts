import type { Logger } from '../log.js';
import type { Mail, Mailer } from './mailer.js';

export interface MailQueueLimits {
  /** Mails waiting to be sent; beyond it new ones are refused (and logged). */
  capacity: number;
  /** Mails being sent at once. */
  concurrency: number;
}

export const DEFAULT_MAIL_QUEUE: MailQueueLimits = { capacity: 1000, concurrency: 4 };

/**
 * E-mail leaves through here, after the database work that made it is committed: a slow or stalled
 * mail server then holds neither a pooled connection nor a request, only a bounded queue in memory.
 * A mail still queued when the process stops is lost; the code it carried is in the database, and
 * recover-password sends a new one.
 */
export class MailQueue {
  readonly #waiting: Mail[] = [];
  #sending = 0;
  #closed = false;

  constructor(
    private readonly mailer: Mailer,
    private readonly log: Logger,
    private readonly limits: MailQueueLimits = DEFAULT_MAIL_QUEUE,
  ) {}

  /** True when a new mail would be refused: callers can say 503 before doing any work. */
  get full(): boolean {
    return this.#waiting.length >= this.limits.capacity;
  }

  /** Queues the mail; false (and a log line) when the queue is full or closed. */
  enqueue(mail: Mail): boolean {
    if (this.#closed || this.full) {
      this.log.error({ queued: this.#waiting.length }, 'e-mail dropped: the mail queue is full');
      return false;
    }
    this.#waiting.push(mail);
    this.#pump();
    return true;
  }

  /** Mails queued or being sent (tests wait for zero). */
  get size(): number {
    return this.#waiting.length + this.#sending;
  }

  #pump(): void {
    while (!this.#closed && this.#sending < this.limits.concurrency && this.#waiting.length) {
      const mail = this.#waiting.shift()!;
      this.#sending++;
      this.mailer
        .send(mail)
        .catch((err: unknown) => this.log.error({ err: { message: (err as Error).message } }, 'e-mail delivery failed'))
        .finally(() => {
          this.#sending--;
          this.#pump();
        });
    }
  }

  /** Drops what has not started; sends in progress end with the mailer's own time-outs. */
  close(): void {
    this.#closed = true;
    this.#waiting.length = 0;
  }
}
