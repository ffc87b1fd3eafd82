import { z } from 'zod';
import { COLUMN_OPERATORS, FILTER_LIMITS, parseFilter } from '../tailer/capture/index.js';

// The `filter` field of a subscription: its shape is checked here, with the body (the tailer's own
// reader, so the api refuses exactly what the tailer could not mean, each refusal at its place);
// columns and value types against the table by the service (validation.ts). The JSON Schema in
// the API reference is written out rather than derived: the reader is not a zod schema (a
// recursive one would walk what it should refuse), and nested filters are described as objects
// of the same language without a `$ref`, which the document could not resolve.

const scalar = { type: ['string', 'number', 'boolean', 'null'] };
const ordered = { type: ['string', 'number'], description: 'A number (or a decimal string), a timestamp, a date or a text.' };
const valueList = { type: 'array', minItems: 1, maxItems: FILTER_LIMITS.list, items: scalar };
const nested = { type: 'object', description: 'A filter of the same language.' };

const operators = {
  type: 'object',
  minProperties: 1,
  additionalProperties: false,
  properties: {
    $path: {
      type: 'array',
      maxItems: FILTER_LIMITS.path,
      items: {
        anyOf: [
          { type: 'string', maxLength: 256 },
          { type: 'integer', minimum: 0 },
        ],
      },
      description: 'Keys and array indexes into a json/jsonb column; the operators then apply to the value found there.',
    },
    $eq: scalar,
    $ne: scalar,
    $lt: ordered,
    $lte: ordered,
    $gt: ordered,
    $gte: ordered,
    $in: valueList,
    $nin: valueList,
    $isNull: { type: 'boolean' },
    $startsWith: { type: 'string', maxLength: FILTER_LIMITS.string },
    $changedFrom: { ...scalar, description: 'UPDATE only: the column changed, and was this before.' },
    $changedTo: { ...scalar, description: 'UPDATE only: the column changed, and is this now.' },
  },
};

const FILTER_JSON_SCHEMA = {
  type: 'object',
  maxProperties: FILTER_LIMITS.list,
  properties: {
    $and: { type: 'array', minItems: 1, maxItems: FILTER_LIMITS.list, items: nested, description: 'Every filter holds.' },
    $or: { type: 'array', minItems: 1, maxItems: FILTER_LIMITS.list, items: nested, description: 'At least one filter holds.' },
    $not: { ...nested, description: 'The filter does not hold.' },
    $old: { ...nested, description: 'The filter holds on the row before the change (UPDATE, DELETE); row conditions only.' },
    $changed: {
      type: 'array',
      minItems: 1,
      maxItems: FILTER_LIMITS.list,
      items: { type: 'string' },
      description: 'UPDATE only: any of these columns changed.',
    },
  },
  additionalProperties: { anyOf: [scalar, operators], description: 'A column: a value (equality) or operators.' },
};

const OPERATOR_NAMES = COLUMN_OPERATORS.map((o) => `\`${o}\``).join(', ');

/** A filter document (docs/filters.md). */
export const filterDocument = z
  .record(z.string(), z.unknown())
  .superRefine((document, ctx) => {
    for (const issue of parseFilter(document).issues) ctx.addIssue({ code: 'custom', message: issue.message, path: issue.path });
  })
  .meta({
    ...FILTER_JSON_SCHEMA,
    description:
      `Which changes are delivered (docs/filters.md). A column name with a value is equality on the new row (the deleted row for DELETE); ` +
      `with an object, operators: ${OPERATOR_NAMES}, and \`$path\` into a json/jsonb column. Combine with \`$and\`, \`$or\`, \`$not\`; ` +
      `\`$old\` tests the row before the change; \`$changed\` lists columns an UPDATE must have changed. Values are compared by the column's type ` +
      `(numeric exactly — a decimal string keeps every digit —, timestamps as instants, text by code point). At most ${FILTER_LIMITS.clauses} clauses, ` +
      `${FILTER_LIMITS.depth} levels. \`null\` clears it on update.`,
    examples: [
      { status: 'paid' },
      { total: { $gt: 100 }, $changed: ['total'] },
      { status: { $changedFrom: 'pending', $changedTo: 'paid' } },
    ],
  });

export type FilterDocument = z.output<typeof filterDocument>;
