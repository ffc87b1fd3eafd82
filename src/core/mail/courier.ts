import type { SecretBox } from '../crypto/secretbox.js';
import type { Pool } from '../db/pool.js';
import type { Logger } from '../log.js';
import type { Mailer } from './mailer.js';
import { claimDueMail, markFailed, markSent, type ClaimedMail } from './outbox.js';

export interface CourierOptions {
  concurrency: number;
  maxAttempts: number;
  retryMaxDelayMs: number;
  leaseMs: number;
  /** The longest a due mail waits when no notification arrives (another process's, or a retry). */
  pollMs?: number;
}

/** 1 s, 2 s, 4 s, … up to the bound: a mail server back after an outage sees its backlog soon. */
export function retryDelay(attempts: number, maxMs: number): number {
  return Math.min(1000 * 2 ** Math.max(0, attempts - 1), maxMs);
}

/**
 * Sends what walgate.mail_outbox holds, in any api process: claims due mails (leased, SKIP
 * LOCKED), sends up to `concurrency` at once, records each outcome. A mail server that is slow or
 * away delays mail and nothing else; a process killed mid-send leaves its claimed mails to be
 * taken again when their lease ends.
 */
export class Courier {
  readonly #abort = new AbortController();
  #loop: Promise<void> | undefined;
  #wake: (() => void) | undefined;
  readonly #inFlight = new Set<Promise<void>>();

  constructor(
    private readonly pool: Pool,
    private readonly secrets: SecretBox,
    private readonly mailer: Mailer,
    private readonly log: Logger,
    private readonly options: CourierOptions,
  ) {}

  start(): void {
    this.#loop ??= this.#run();
  }

  /** Looks for due mail now (a mail was just committed). */
  nudge(): void {
    this.#wake?.();
  }

  /** Stops claiming; sends in flight end with the mailer's own time-outs, unclaimed ones wait for the next courier. */
  async stop(): Promise<void> {
    this.#abort.abort();
    this.#wake?.();
    await this.#loop;
    await Promise.allSettled([...this.#inFlight]);
  }

  async #run(): Promise<void> {
    const pollMs = this.options.pollMs ?? 1000;
    while (!this.#abort.signal.aborted) {
      const room = this.options.concurrency - this.#inFlight.size;
      let claimed: ClaimedMail[] = [];
      if (room > 0) {
        try {
          claimed = await claimDueMail(this.pool, this.secrets, room, this.options.leaseMs);
        } catch (err) {
          this.log.warn({ err: { message: (err as Error).message } }, 'mail courier could not claim mail; retrying');
        }
        for (const m of claimed) {
          const sending = this.#send(m).finally(() => {
            this.#inFlight.delete(sending);
            this.#wake?.();
          });
          this.#inFlight.add(sending);
        }
      }
      // A full batch means more may be due: claim again as soon as a send frees room.
      if (claimed.length > 0 && claimed.length === room) await this.#rest(50);
      else await this.#rest(pollMs);
    }
  }

  async #send(m: ClaimedMail): Promise<void> {
    try {
      await this.mailer.send(m.mail);
      await markSent(this.pool, m.id);
    } catch (err) {
      const last = m.attempts >= this.options.maxAttempts;
      const message = (err as Error).message;
      this.log[last ? 'error' : 'warn'](
        { mail: m.id, attempts: m.attempts, err: { message } },
        last ? 'e-mail dead' : 'e-mail not sent; retrying',
      );
      await markFailed(this.pool, m.id, message, last ? null : retryDelay(m.attempts, this.options.retryMaxDelayMs)).catch(() => {
        /* the lease ends and the mail is tried again */
      });
    }
  }

  /** Waits `ms`, or less when nudged or stopped. */
  async #rest(ms: number): Promise<void> {
    if (this.#abort.signal.aborted) return;
    await new Promise<void>((resolve) => {
      const done = () => {
        this.#wake = undefined;
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.#wake = done;
    });
  }
}
