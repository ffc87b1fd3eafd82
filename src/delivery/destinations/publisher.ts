import type { SendResult } from '../sender.js';

// One interface for every broker a destination may be: connect once, publish a message (the
// POST's body and headers) and learn whether the broker took it, close. The connection cache
// (connections.ts) holds one per destination.

export interface BrokerMessage {
  /** The subject (NATS) or the exchange and routing key (RabbitMQ), `{event}` filled in. */
  subject?: string;
  exchange?: string;
  routingKey?: string;
  /** The event id: `Nats-Msg-Id` / `message-id`, so the broker (or a consumer) drops replays. */
  messageId: string;
  headers: Record<string, string>;
  body: string;
  /** The channel it goes through (RabbitMQ: one per subscription, so one's missing exchange closes only its own). */
  channel: string;
}

export interface BrokerPublisher {
  publish(m: BrokerMessage): Promise<SendResult>;
  /** True while the connection is usable; a closed one is replaced on the next publish. */
  readonly open: boolean;
  close(): Promise<void>;
}

export interface BrokerSettings {
  url: URL;
  username?: string;
  password?: string;
  token?: string;
  timeoutMs: number;
  /** How the broker lists the connection (RabbitMQ's connection_name, NATS's client name): walgate and the destination id. */
  name?: string;
}

const MAX_ERROR = 200;

/** A failed attempt as the HTTP sender reports one: no status, a short error, no answer. */
export function failed(error: string, startedAt: number): SendResult {
  const text = error.length > MAX_ERROR ? `${error.slice(0, MAX_ERROR - 1)}…` : error;
  return { status: null, ok: false, error: text, durationMs: Math.round(performance.now() - startedAt), responseBody: null };
}

export function published(startedAt: number, note: string | null = null): SendResult {
  return { status: null, ok: true, error: null, durationMs: Math.round(performance.now() - startedAt), responseBody: note };
}
