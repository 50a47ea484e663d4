import { TypeGuards, Value, Variable, type Template } from 'liquidjs';
import { engine } from './template-engine.js';
import { finishSync, type FilterLike, type ParsedMessage } from './templates.js';

/**
 * Whether the message may read anything of its recipient (`user.*`), by liquidjs's static analysis
 * of every field. Conservative: a variable whose root is not a plain name (`{{ [x].y }}`), or that
 * mentions `user` anywhere (also a local named so, or a nested index), counts as a read. A message
 * that reads no `user` renders the same for every recipient, so a batch renders it once (in the
 * render worker, as always).
 */
export function messageReadsUser(parsed: ParsedMessage): boolean {
  for (const templates of Object.values(parsed)) {
    if (!templates) continue;
    // liquidjs reports `[trigger.k].x` as `trigger.k.x`: a root computed at render time could be `user`.
    if (hasComputedRoot(templates)) return true;
    const { variables } = engine.analyzeSync(templates, { partials: false });
    for (const list of Object.values(variables)) for (const variable of list) if (mentionsUser(variable)) return true;
  }
  return false;
}

function hasComputedRoot(templates: Template[]): boolean {
  for (const template of templates) {
    if (template.arguments) for (const argument of template.arguments()) if (computedRootIn(argument)) return true;
    if (template.children && hasComputedRoot(finishSync(template.children(false, true)))) return true;
  }
  return false;
}

function computedRootIn(token: unknown): boolean {
  if (token instanceof Value || TypeGuards.isFilteredValueToken(token))
    return (
      token.initial.postfix.some(computedRootIn) ||
      (token.filters as FilterLike[]).some((f) => f.args.some((a) => computedRootIn(Array.isArray(a) ? a[1] : a)))
    );
  if (TypeGuards.isPropertyAccessToken(token)) {
    const [root] = token.props;
    const plainRoot = root === undefined || TypeGuards.isWordToken(root) || TypeGuards.isQuotedToken(root);
    if (token.variable === undefined && !plainRoot) return true;
    if (token.variable !== undefined && computedRootIn(token.variable)) return true;
    return token.props.some((prop) => !TypeGuards.isWordToken(prop) && computedRootIn(prop));
  }
  if (TypeGuards.isRangeToken(token)) return computedRootIn(token.lhs) || computedRootIn(token.rhs);
  return false;
}

function mentionsUser(variable: Variable): boolean {
  const [root] = variable.segments;
  if (typeof root !== 'string' || root === 'user') return true;
  return variable.segments.some((segment) => segment instanceof Variable && mentionsUser(segment));
}

/** Whether any field reads a variable rooted at `root` by name (`{{ event.name }}`): what save-time checks of a scope ask. */
export function messageReadsScope(parsed: ParsedMessage, root: string): boolean {
  for (const templates of Object.values(parsed)) {
    if (!templates) continue;
    const { variables } = engine.analyzeSync(templates, { partials: false });
    for (const list of Object.values(variables))
      for (const variable of list) if (variable.segments[0] === root) return true;
  }
  return false;
}
