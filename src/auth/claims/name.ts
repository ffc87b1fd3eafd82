import { isPlainIdentifier } from '../../core/db/identifiers.js';

// `claimsFunction` names a function as `schema.function`, both plain identifiers taken exactly as
// written (they are quoted before they meet SQL text: `app.Claims` is not `app.claims`).

export interface FunctionName {
  schema: string;
  name: string;
}

export const FUNCTION_NAME = /^[A-Za-z_][A-Za-z0-9_$]{0,62}\.[A-Za-z_][A-Za-z0-9_$]{0,62}$/;
export const FUNCTION_NAME_RULE = 'must name a function as schema.function (letters, digits, `_`, `$`)';

export function parseFunctionName(text: string): FunctionName | undefined {
  if (!FUNCTION_NAME.test(text)) return undefined;
  const [schema, name] = text.split('.') as [string, string];
  return isPlainIdentifier(schema) && isPlainIdentifier(name) ? { schema, name } : undefined;
}
