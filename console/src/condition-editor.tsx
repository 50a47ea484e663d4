import { useState } from 'preact/hooks';
import { ConditionBuilder } from './condition-builder.js';
import { ConditionError, fromCondition, toCondition, type Condition, type GroupNode } from './condition.js';
import { ErrorNote, valueOf } from './ui.js';

/** What a condition field holds while edited: the builder's tree, or raw JSON for what it cannot show. */
export type ConditionDraft = { mode: 'builder'; tree: GroupNode } | { mode: 'json'; text: string };

export function draftOf(condition: unknown): ConditionDraft {
  try {
    return { mode: 'builder', tree: fromCondition(condition) };
  } catch {
    return { mode: 'json', text: JSON.stringify(condition, null, 2) };
  }
}

/** The condition JSON (null: none) or a ConditionError naming what to fix. */
export function conditionOf(draft: ConditionDraft, what: string): Condition | null {
  if (draft.mode === 'builder') {
    try {
      return toCondition(draft.tree);
    } catch (error) {
      throw new ConditionError(`${what}: ${(error as Error).message}`);
    }
  }
  if (!draft.text.trim() || draft.text.trim() === 'null') return null;
  try {
    return JSON.parse(draft.text) as Condition;
  } catch {
    throw new ConditionError(`${what}: not valid JSON`);
  }
}

/** A condition field with a builder and a JSON view; switching converts between them when it can. */
export function ConditionEditor(props: {
  id: string;
  legend: string;
  hint: string;
  value: ConditionDraft;
  onChange: (draft: ConditionDraft) => void;
  allowTrigger: boolean;
  propertiesOnly?: boolean;
}) {
  const [error, setError] = useState<unknown>(null);
  const toggle = () => {
    setError(null);
    try {
      if (props.value.mode === 'builder') {
        const condition = toCondition(props.value.tree);
        props.onChange({ mode: 'json', text: condition ? JSON.stringify(condition, null, 2) : '' });
      } else {
        props.onChange({
          mode: 'builder',
          tree: fromCondition(props.value.text.trim() ? JSON.parse(props.value.text) : null),
        });
      }
    } catch (e) {
      setError(e instanceof SyntaxError ? new Error('The JSON is not valid') : e);
    }
  };
  return (
    <fieldset class="condition">
      <legend>{props.legend}</legend>
      <p class="hint" id={`${props.id}-hint`}>
        {props.hint}
      </p>
      {props.value.mode === 'builder' ? (
        <ConditionBuilder
          idPrefix={props.id}
          value={props.value.tree}
          onChange={(tree) => props.onChange({ mode: 'builder', tree })}
          allowTrigger={props.allowTrigger}
          propertiesOnly={props.propertiesOnly ?? false}
        />
      ) : (
        <>
          <label for={`${props.id}-json`}>{props.legend} as JSON</label>
          <textarea
            id={`${props.id}-json`}
            class="json-editor"
            rows={Math.min(24, Math.max(10, props.value.text.split('\n').length + 2))}
            spellcheck={false}
            value={props.value.text}
            aria-describedby={`${props.id}-hint`}
            onInput={(e) => props.onChange({ mode: 'json', text: valueOf(e) })}
          />
        </>
      )}
      <button type="button" class="link" onClick={toggle}>
        {props.value.mode === 'builder' ? 'Edit as JSON' : 'Use the builder'}
      </button>
      <ErrorNote error={error} />
    </fieldset>
  );
}
