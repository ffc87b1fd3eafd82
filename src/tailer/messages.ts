import type { Change } from './events.js';
import type { Row } from './match.js';
import type { LogicalMessage } from './logical-message.js';
import type { ValueKind } from './filter/kinds.js';

// Outbox messages: `pg_logical_emit_message(true, prefix, content)` in an application's
// transaction reaches subscriptions on the table name `_messages`, as an INSERT whose record is
// {prefix, content}, in commit order with that transaction's row changes (the session gives it
// its place among them). It is not a table: nothing is published, nothing is stored but the
// delivery.
//
// Whose message is it? Every environment's schema lives in one database, and a message carries
// no schema, so the prefix names it: `<schema>.<anything>` (or the schema alone) belongs to that
// schema's environment. Without that rule one tenant's application could write into every other
// tenant's `_messages` subscriptions, and read theirs. `walgate.` is walgate's own (backfill
// watermarks): no environment may have that schema, and such messages go to the session's hook.

/** The table name subscriptions use. */
export const MESSAGES_TABLE = '_messages';

/** The columns of a message's record, in order. */
export const MESSAGE_COLUMNS: readonly string[] = ['prefix', 'content'];

/** Prefixes walgate emits for itself: never delivered to `_messages` subscriptions. */
export const RESERVED_PREFIX = 'walgate.';

export function isReservedPrefix(prefix: string): boolean {
  return prefix.startsWith(RESERVED_PREFIX);
}

/** The schema (environment) a message belongs to: the prefix up to its first dot. */
export function messageSchema(prefix: string): string {
  const dot = prefix.indexOf('.');
  return dot < 0 ? prefix : prefix.slice(0, dot);
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * The content as a JSON fragment: the JSON itself when the content is a JSON text, else a JSON
 * string of it; bytes that are not UTF-8 (the bytea form of the function) as to_jsonb renders a
 * bytea — the string `\x` followed by hex digits.
 */
export function messageContent(content: Buffer): string {
  let text: string;
  try {
    text = utf8.decode(content);
  } catch {
    return JSON.stringify(`\\x${content.toString('hex')}`);
  }
  try {
    // JSON.parse is iterative in V8: deep nesting costs time linear in the size, no stack.
    JSON.parse(text);
    // The text as sent (numbers keep their digits), without the surrounding whitespace.
    return text.trim();
  } catch {
    return JSON.stringify(text);
  }
}

/** A message as its subscribers see it: an INSERT into `_messages` of their schema. */
export function messageChange(eventId: string, committedAt: Date, schema: string, msg: LogicalMessage): Change {
  const record: Row = {
    names: MESSAGE_COLUMNS,
    fragments: [JSON.stringify(msg.prefix), messageContent(msg.content)],
    indexOf: MESSAGE_INDEX,
    kinds: MESSAGE_KINDS,
  };
  return { eventId, operation: 'INSERT', schema, table: MESSAGES_TABLE, committedAt, record, old: null, changedFields: [] };
}

const MESSAGE_INDEX: ReadonlyMap<string, number> = new Map(MESSAGE_COLUMNS.map((c, i) => [c, i]));

/** As the api checks filters on them (capture/index.ts: messageColumns): the prefix is text, the content JSON. */
const MESSAGE_KINDS: readonly ValueKind[] = ['text', 'json'];

/**
 * What a session hands to whoever asked for walgate's own messages (`walgate.` prefixes, e.g.
 * backfill watermarks): the message, and for a transactional one the commit it belongs to and its
 * place in that transaction (the same numbering as event ids).
 */
export interface ReservedMessage {
  message: LogicalMessage;
  /** Null for a non-transactional message (sent as soon as it was decoded, outside any transaction). */
  commitLsn: bigint | null;
  index: number | null;
  committedAt: Date | null;
}
