import {
  GraphQLError,
  Kind,
  validate,
  type ASTVisitor,
  type DocumentNode,
  type FragmentDefinitionNode,
  type GraphQLSchema,
  type SelectionSetNode,
  type ValidationContext,
  type ValidationRule,
} from 'graphql';

// Validation rules that bound what one document may ask for, before anything executes: its depth
// (nested selections) and its cost (fields selected, fragments expanded, aliases counted each time,
// so `a1: me … a500: me` costs 500 lookups, not one).
//
// The measure takes time linear in the document, whatever its fragments do: each fragment is
// measured once and remembered (a fragment spread twice at each of 22 levels is 2^22 expanded
// fields, but 22 measurements), and the numbers saturate just past the limits, so a walk stops as
// soon as its answer is "too much".

export interface SizeLimits {
  maxDepth: number;
  maxCost: number;
}

interface Size {
  depth: number;
  cost: number;
}

/** Measures selection sets and fragments of one document; fragments once each. */
class Measure {
  readonly #fragments = new Map<string, Size>();
  readonly #inProgress = new Set<string>();

  constructor(
    private readonly limits: SizeLimits,
    private readonly fragment: (name: string) => FragmentDefinitionNode | undefined,
  ) {}

  /** Depth and cost, each capped at one past its limit (enough to refuse, never a huge number). */
  selectionSet(set: SelectionSetNode): Size {
    let depth = 0;
    let cost = 0;
    for (const selection of set.selections) {
      let inner: Size = { depth: 0, cost: 0 };
      if (selection.kind === Kind.FIELD) {
        const child = selection.selectionSet ? this.selectionSet(selection.selectionSet) : inner;
        inner = { depth: child.depth + 1, cost: child.cost + 1 };
      } else if (selection.kind === Kind.INLINE_FRAGMENT) {
        inner = this.selectionSet(selection.selectionSet);
      } else {
        inner = this.spread(selection.name.value);
      }
      depth = Math.min(Math.max(depth, inner.depth), this.limits.maxDepth + 1);
      cost = Math.min(cost + inner.cost, this.limits.maxCost + 1);
      if (depth > this.limits.maxDepth || cost > this.limits.maxCost) break; // refused already
    }
    return { depth, cost };
  }

  spread(name: string): Size {
    const known = this.#fragments.get(name);
    if (known) return known;
    const fragment = this.fragment(name);
    // An unknown fragment, or a cycle (both reported by graphql's own rules), adds nothing here.
    if (!fragment || this.#inProgress.has(name)) return { depth: 0, cost: 0 };
    this.#inProgress.add(name);
    const size = this.selectionSet(fragment.selectionSet);
    this.#inProgress.delete(name);
    this.#fragments.set(name, size);
    return size;
  }
}

export function sizeLimits(limits: SizeLimits): ValidationRule {
  return (context: ValidationContext): ASTVisitor => ({
    Document(document) {
      const measure = new Measure(limits, (name) => context.getFragment(name) ?? undefined);
      // Operations first; then fragments, which graphql's other rules walk even when no operation
      // uses them (an unused fragment is an error of its own, but the walk happens first).
      const definitions = [
        ...document.definitions.filter((d) => d.kind === Kind.OPERATION_DEFINITION),
        ...document.definitions.filter((d) => d.kind === Kind.FRAGMENT_DEFINITION),
      ];
      for (const node of definitions) {
        const size = node.kind === Kind.OPERATION_DEFINITION ? measure.selectionSet(node.selectionSet) : measure.spread(node.name.value);
        const what = node.kind === Kind.OPERATION_DEFINITION ? 'operation' : `fragment ${node.name.value}`;
        if (size.depth > limits.maxDepth) {
          context.reportError(
            new GraphQLError(`The ${what} is more than ${limits.maxDepth} levels deep; at most ${limits.maxDepth} are allowed.`, {
              nodes: [node],
            }),
          );
          return false;
        }
        if (size.cost > limits.maxCost) {
          context.reportError(
            new GraphQLError(`The ${what} selects more than ${limits.maxCost} fields; at most ${limits.maxCost} are allowed.`, {
              nodes: [node],
            }),
          );
          return false;
        }
      }
      return false; // measured: nothing below the document is visited by this rule
    },
  });
}

/**
 * graphql's `validate`, in two passes: first the size limits alone (linear), and the full rule set
 * only for a document within them. Some of graphql's own rules are not linear — comparing the
 * fields of one selection set for overlaps is quadratic in their number — and the limits keep the
 * sets they see small.
 */
export function boundedValidate(limits: SizeLimits): typeof validate {
  const size = sizeLimits(limits);
  return (schema: GraphQLSchema, document: DocumentNode, rules, options, typeInfo) => {
    const errors = validate(schema, document, [size], options, typeInfo);
    return errors.length > 0 ? errors : validate(schema, document, rules, options, typeInfo);
  };
}
