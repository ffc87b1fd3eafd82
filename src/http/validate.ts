import type { z } from 'zod';
import { validationError, violationsOf } from './errors.js';

/** Parses a request part with its zod schema; failures become 400 VALIDATION_ERROR with `violations`. */
export function parse<S extends z.ZodType>(schema: S, value: unknown, message?: string): z.output<S> {
  const result = schema.safeParse(value);
  if (!result.success) throw validationError(violationsOf(result.error), message);
  return result.data;
}
