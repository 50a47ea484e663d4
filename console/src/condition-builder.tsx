import {
  EVENT_OPS,
  newEvent,
  newProperty,
  OP_LABELS,
  PROPERTY_OPS,
  emptyGroup,
  type ConditionNode,
  type EventNode,
  type GroupNode,
  type PropertyNode,
  type ValueType,
} from './condition.js';
import { valueOf } from './ui.js';

const TYPE_LABELS: Record<ValueType, string> = {
  text: 'text',
  number: 'number',
  boolean: 'true/false',
  null: 'null',
  trigger: 'trigger property',
};

interface Props {
  idPrefix: string;
  value: GroupNode;
  onChange: (value: GroupNode) => void;
  /** Audience conditions may compare with the trigger's properties; segments and user search may not. */
  allowTrigger: boolean;
  /** Only property conditions (an event trigger's condition tests the event's own properties). */
  propertiesOnly?: boolean;
}

/** Builds a condition tree with plain form controls: every control labelled, all reachable by keyboard. */
export function ConditionBuilder(props: Props) {
  return (
    <Group
      id={props.idPrefix}
      node={props.value}
      onChange={(node) => props.onChange(node as GroupNode)}
      depth={0}
      allowTrigger={props.allowTrigger}
      propertiesOnly={props.propertiesOnly ?? false}
    />
  );
}

interface NodeProps<T extends ConditionNode> {
  id: string;
  node: T;
  onChange: (node: ConditionNode) => void;
  onRemove?: () => void;
  depth: number;
  allowTrigger: boolean;
  propertiesOnly?: boolean;
}

function Group(props: NodeProps<GroupNode>) {
  const { id, node } = props;
  const set = (patch: Partial<GroupNode>) => props.onChange({ ...node, ...patch });
  const setChild = (i: number, child: ConditionNode) =>
    set({ children: node.children.map((c, j) => (j === i ? child : c)) });
  const removeChild = (i: number) => set({ children: node.children.filter((_, j) => j !== i) });
  const label = props.depth === 0 ? 'Conditions' : `Group at level ${props.depth + 1}`;
  return (
    <div class={`cond-group depth-${Math.min(props.depth, 3)}`} role="group" aria-label={label}>
      <div class="cond-row">
        <label for={`${id}-combinator`}>Match</label>
        <select
          id={`${id}-combinator`}
          value={node.combinator}
          onChange={(e) => set({ combinator: valueOf(e) as 'all' | 'any' })}
        >
          <option value="all">all of</option>
          <option value="any">any of</option>
        </select>
        <label class="check">
          <input type="checkbox" checked={node.negate} onChange={(e) => set({ negate: e.currentTarget.checked })} />
          not (negate)
        </label>
        {props.onRemove && (
          <button type="button" class="link danger" onClick={props.onRemove}>
            Remove group
          </button>
        )}
      </div>
      {node.children.length === 0 && props.depth === 0 && <p class="hint">No conditions: everyone matches.</p>}
      {node.children.map((child, i) => {
        const childProps = {
          id: `${id}-${i}`,
          onChange: (c: ConditionNode) => setChild(i, c),
          onRemove: () => removeChild(i),
          depth: props.depth + 1,
          allowTrigger: props.allowTrigger,
          propertiesOnly: props.propertiesOnly ?? false,
        };
        if (child.kind === 'group') return <Group key={i} {...childProps} node={child} />;
        if (child.kind === 'event') return <EventLeaf key={i} {...childProps} node={child} />;
        return <PropertyLeaf key={i} {...childProps} node={child} />;
      })}
      <div class="cond-add">
        <button type="button" class="secondary" onClick={() => set({ children: [...node.children, newProperty()] })}>
          + Property condition
        </button>
        {!props.propertiesOnly && (
          <button type="button" class="secondary" onClick={() => set({ children: [...node.children, newEvent()] })}>
            + Event condition
          </button>
        )}
        {props.depth < 3 && (
          <button type="button" class="secondary" onClick={() => set({ children: [...node.children, emptyGroup()] })}>
            + Group
          </button>
        )}
      </div>
    </div>
  );
}

function PropertyLeaf(props: NodeProps<PropertyNode>) {
  const { id, node } = props;
  const set = (patch: Partial<PropertyNode>) => props.onChange({ ...node, ...patch });
  const takesValue = node.op !== 'exists' && node.op !== 'not_exists';
  const list = node.op === 'in' || node.op === 'not_in';
  return (
    <div class="cond-row leaf" role="group" aria-label="Property condition">
      <span class="field-inline">
        <label for={`${id}-property`}>Property</label>
        <input
          id={`${id}-property`}
          value={node.property}
          onInput={(e) => set({ property: valueOf(e) })}
          spellcheck={false}
        />
      </span>
      <span class="field-inline">
        <label for={`${id}-op`}>Operator</label>
        <select id={`${id}-op`} value={node.op} onChange={(e) => set({ op: valueOf(e) as PropertyNode['op'] })}>
          {PROPERTY_OPS.map((op) => (
            <option key={op} value={op}>
              {OP_LABELS[op]}
            </option>
          ))}
        </select>
      </span>
      {takesValue && (
        <>
          <span class="field-inline">
            <label for={`${id}-type`}>Type</label>
            <select
              id={`${id}-type`}
              value={node.valueType}
              onChange={(e) => set({ valueType: valueOf(e) as ValueType })}
            >
              {(Object.keys(TYPE_LABELS) as ValueType[])
                .filter((t) => props.allowTrigger || t !== 'trigger')
                .map((t) => (
                  <option key={t} value={t}>
                    {TYPE_LABELS[t]}
                  </option>
                ))}
            </select>
          </span>
          {node.valueType !== 'null' && (
            <span class="field-inline">
              <label for={`${id}-value`}>
                {node.valueType === 'trigger' ? 'Trigger property' : list ? 'Values (comma-separated)' : 'Value'}
              </label>
              <input
                id={`${id}-value`}
                value={node.value}
                onInput={(e) => set({ value: valueOf(e) })}
                spellcheck={false}
              />
            </span>
          )}
        </>
      )}
      <label class="check">
        <input type="checkbox" checked={node.negate} onChange={(e) => set({ negate: e.currentTarget.checked })} />
        not
      </label>
      {props.onRemove && (
        <button
          type="button"
          class="link danger"
          onClick={props.onRemove}
          aria-label={`Remove condition on ${node.property || 'property'}`}
        >
          Remove
        </button>
      )}
    </div>
  );
}

function EventLeaf(props: NodeProps<EventNode>) {
  const { id, node } = props;
  const set = (patch: Partial<EventNode>) => props.onChange({ ...node, ...patch });
  return (
    <div class="cond-row leaf" role="group" aria-label="Event condition">
      <span class="field-inline">
        <label for={`${id}-op`}>User</label>
        <select id={`${id}-op`} value={node.op} onChange={(e) => set({ op: valueOf(e) as EventNode['op'] })}>
          {EVENT_OPS.map((op) => (
            <option key={op} value={op}>
              {OP_LABELS[op]}
            </option>
          ))}
        </select>
      </span>
      <span class="field-inline">
        <label for={`${id}-event`}>Event</label>
        <input id={`${id}-event`} value={node.event} onInput={(e) => set({ event: valueOf(e) })} spellcheck={false} />
      </span>
      <span class="field-inline narrow">
        <label for={`${id}-count`}>At least (times)</label>
        <input
          id={`${id}-count`}
          inputMode="numeric"
          value={node.countGte}
          onInput={(e) => set({ countGte: valueOf(e) })}
        />
      </span>
      <span class="field-inline narrow">
        <label for={`${id}-days`}>Within days</label>
        <input
          id={`${id}-days`}
          inputMode="numeric"
          value={node.withinDays}
          onInput={(e) => set({ withinDays: valueOf(e) })}
        />
      </span>
      <label class="check">
        <input type="checkbox" checked={node.negate} onChange={(e) => set({ negate: e.currentTarget.checked })} />
        not
      </label>
      {props.onRemove && (
        <button
          type="button"
          class="link danger"
          onClick={props.onRemove}
          aria-label={`Remove condition on event ${node.event}`}
        >
          Remove
        </button>
      )}
    </div>
  );
}
