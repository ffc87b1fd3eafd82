import { GraphQLError, Kind, type ASTVisitor, type SelectionSetNode, type ValidationContext, type ValidationRule } from 'graphql';

// Validation rules that bound what one document may ask for, before anything executes: its depth
// (nested selections) and its cost (fields selected, fragments expanded, aliases counted each time,
// so `a1: me … a500: me` costs 500 lookups, not one).

interface Size {
  depth: number;
  cost: number;
}

function measure(set: SelectionSetNode, context: ValidationContext, seen: ReadonlySet<string>): Size {
  let depth = 0;
  let cost = 0;
  for (const selection of set.selections) {
    let inner: Size = { depth: 0, cost: 0 };
    if (selection.kind === Kind.FIELD) {
      const child = selection.selectionSet ? measure(selection.selectionSet, context, seen) : inner;
      inner = { depth: child.depth + 1, cost: child.cost + 1 };
    } else if (selection.kind === Kind.INLINE_FRAGMENT) {
      inner = measure(selection.selectionSet, context, seen);
    } else {
      // A fragment cycle is reported by graphql's own NoFragmentCycles; here it just stops.
      const name = selection.name.value;
      const fragment = context.getFragment(name);
      if (fragment && !seen.has(name)) inner = measure(fragment.selectionSet, context, new Set([...seen, name]));
    }
    depth = Math.max(depth, inner.depth);
    cost += inner.cost;
  }
  return { depth, cost };
}

export function sizeLimits(limits: { maxDepth: number; maxCost: number }): ValidationRule {
  return (context: ValidationContext): ASTVisitor => ({
    OperationDefinition(node) {
      const { depth, cost } = measure(node.selectionSet, context, new Set());
      if (depth > limits.maxDepth) {
        context.reportError(new GraphQLError(`The operation is ${depth} levels deep; at most ${limits.maxDepth} are allowed.`, { nodes: [node] }));
      }
      if (cost > limits.maxCost) {
        context.reportError(new GraphQLError(`The operation selects ${cost} fields; at most ${limits.maxCost} are allowed.`, { nodes: [node] }));
      }
    },
  });
}
