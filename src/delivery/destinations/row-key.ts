import { fillTemplate, natsSubjectProblem, routingKeyProblem, type DestinationAddress } from './address.js';

// `{key}` in a subject or routing key: the row's primary-key values, one token each, in key
// order, joined by `.`. Read from the message's own body (its `record`, the deleted row for a
// DELETE), so the stream and the retry queue fill it the same way without carrying the key.
// The values are taken as the payload spells them (to_jsonb text), never through a JS number,
// so a bigint key keeps its digits.
//
// A value can never add or remove a token: `%` and every character a subject token (or a topic
// exchange's word) cannot hold or would split at — `.`, `*`, `>`, whitespace, control characters —
// are written `%XX` (UTF-8 bytes, upper-case hex), and an empty value is `%00` (Postgres text
// cannot hold NUL, so no value is written so). Distinct values give distinct tokens.

const ESCAPED = /[%.*>\s\p{Cc}]/gu;

/** One key value as a subject token. */
export function keyToken(value: string): string {
  if (value.length === 0) return '%00';
  return value.replace(ESCAPED, (c) =>
    [...Buffer.from(c, 'utf8')].map((b) => `%${b.toString(16).toUpperCase().padStart(2, '0')}`).join(''),
  );
}

/** A to_jsonb fragment as key text: a string's characters, anything else (number, boolean, null, JSON) as written. */
function valueText(raw: string): string {
  return raw.startsWith('"') ? (JSON.parse(raw) as string) : raw;
}

/**
 * The members of the JSON object that starts at `start`, each as its raw text. The payload is
 * walgate's own JSON (payload.ts), so this only needs to skip strings and nested values.
 */
export function rawMembers(text: string, start = 0): Map<string, string> | undefined {
  const members = new Map<string, string>();
  let i = skipSpace(text, start);
  if (text[i] !== '{') return undefined;
  i = skipSpace(text, i + 1);
  if (text[i] === '}') return members;
  for (;;) {
    if (text[i] !== '"') return undefined;
    const nameEnd = stringEnd(text, i);
    const name = JSON.parse(text.slice(i, nameEnd)) as string;
    i = skipSpace(text, nameEnd);
    if (text[i] !== ':') return undefined;
    const valueStart = skipSpace(text, i + 1);
    const valueEnd = valueEndAt(text, valueStart);
    members.set(name, text.slice(valueStart, valueEnd));
    i = skipSpace(text, valueEnd);
    if (text[i] === '}') return members;
    if (text[i] !== ',') return undefined;
    i = skipSpace(text, i + 1);
  }
}

function skipSpace(text: string, i: number): number {
  while (i < text.length && /\s/.test(text[i]!)) i++;
  return i;
}

/** The index after the string that opens at `i`. */
function stringEnd(text: string, i: number): number {
  for (let j = i + 1; j < text.length; j++) {
    if (text[j] === '\\') j++;
    else if (text[j] === '"') return j + 1;
  }
  return text.length;
}

/** The index after the value that starts at `i` (a string, an object or array, or a literal). */
function valueEndAt(text: string, i: number): number {
  if (text[i] === '"') return stringEnd(text, i);
  if (text[i] === '{' || text[i] === '[') {
    let depth = 0;
    for (let j = i; j < text.length; j++) {
      const c = text[j];
      if (c === '"') j = stringEnd(text, j) - 1;
      else if (c === '{' || c === '[') depth++;
      else if ((c === '}' || c === ']') && --depth === 0) return j + 1;
    }
    return text.length;
  }
  let j = i;
  while (j < text.length && !/[,}\]\s]/.test(text[j]!)) j++;
  return j;
}

/** `{key}` for one message: its record's key values as tokens joined by `.`; an Error says why there is none. */
export function rowKey(body: string, keyColumns: readonly string[]): string | Error {
  const record = rawMembers(body)?.get('record');
  const values = record === undefined ? undefined : rawMembers(record);
  if (!values) return new Error('{key}: the message carries no record (one row) to take the key from');
  const tokens: string[] = [];
  for (const column of keyColumns) {
    const raw = values.get(column);
    if (raw === undefined) return new Error(`{key}: the record has no key column ${JSON.stringify(column)}`);
    tokens.push(keyToken(valueText(raw)));
  }
  return tokens.join('.');
}

/** Where one message goes: `{event}` and `{key}` filled in and the result checked; an Error says why it cannot go. */
export function messageTarget(
  address: DestinationAddress,
  event: string,
  body: string,
): { subject: string } | { exchange: string; routingKey: string } | Error {
  const template = address.kind === 'nats' ? address.subject : address.routingKey;
  let key: string | undefined;
  if (address.keyColumns?.length && template.includes('{key}')) {
    const found = rowKey(body, address.keyColumns);
    if (found instanceof Error) return found;
    key = found;
  }
  const filled = fillTemplate(template, key === undefined ? { event } : { event, key });
  if (address.kind === 'nats') {
    const why = key === undefined ? undefined : natsSubjectProblem(filled);
    return why ? new Error(`NATS: the subject ${why}, once {key} is filled in`) : { subject: filled };
  }
  const why = routingKeyProblem(filled);
  if (why) return new Error(`RabbitMQ: the routing key ${why}: the row's key is too long for it`);
  return { exchange: address.exchange, routingKey: filled };
}
