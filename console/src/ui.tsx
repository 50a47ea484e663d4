import type { ComponentChildren, TargetedEvent } from 'preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { ApiError } from './api.js';
import { BASE, navigate } from './router.js';

/** An in-app link: a real <a href> (open in a new tab works), routed without a reload on a plain click. */
export function Link(props: {
  to: string;
  children: ComponentChildren;
  class?: string;
  current?: boolean;
  title?: string;
}) {
  const href = `${BASE}${props.to}`;
  const onClick = (event: MouseEvent) => {
    if (
      event.defaultPrevented ||
      event.button !== 0 ||
      event.metaKey ||
      event.ctrlKey ||
      event.shiftKey ||
      event.altKey
    )
      return;
    event.preventDefault();
    navigate(props.to);
  };
  return (
    <a
      href={href}
      onClick={onClick}
      class={props.class}
      title={props.title}
      aria-current={props.current ? 'page' : undefined}
    >
      {props.children}
    </a>
  );
}

export function messageOf(error: unknown): string {
  if (error instanceof ApiError) return `${error.message}${error.reason ? ` (${error.reason})` : ''}`;
  return error instanceof Error ? error.message : String(error);
}

/** A failure, announced to screen readers. */
export function ErrorNote(props: { error: unknown }) {
  if (props.error === null || props.error === undefined) return null;
  return (
    <p class="error" role="alert">
      {messageOf(props.error)}
    </p>
  );
}

/** A labelled field: the label names the control (for=id), a hint is tied with aria-describedby. */
export function Field(props: { id: string; label: string; hint?: string; children: ComponentChildren }) {
  return (
    <div class="field">
      <label for={props.id}>{props.label}</label>
      {props.children}
      {props.hint && (
        <small id={`${props.id}-hint`} class="hint">
          {props.hint}
        </small>
      )}
    </div>
  );
}

export type InputEvent = TargetedEvent<HTMLInputElement | HTMLTextAreaElement | HTMLSelectElement, Event>;
export const valueOf = (event: InputEvent) => event.currentTarget.value;

/**
 * Loads something when `key` changes; `reload()` loads it again, `replace(data)` shows data the page
 * already has (the answer of a save). Stale answers are dropped.
 */
export function useLoad<T>(load: (signal: AbortSignal) => Promise<T>, key: string) {
  const [state, setState] = useState<{ data?: T; error?: unknown; loading: boolean }>({ loading: true });
  const [tick, setTick] = useState(0);
  const loadRef = useRef(load);
  loadRef.current = load;
  useEffect(() => {
    const controller = new AbortController();
    setState((s) => ({ data: s.data, loading: true }));
    loadRef.current(controller.signal).then(
      (data) => !controller.signal.aborted && setState({ data, loading: false }),
      (error: unknown) => !controller.signal.aborted && setState({ error, loading: false }),
    );
    return () => controller.abort();
  }, [key, tick]);
  const reload = useCallback(() => setTick((n) => n + 1), []);
  const replace = useCallback((data: T) => setState({ data, loading: false }), []);
  return { ...state, reload, replace };
}

/** Runs an action from a button or form; `busy` while it runs, its error kept for display. */
export function useAction<A extends unknown[], T>(action: (...args: A) => Promise<T>) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const run = useCallback(
    (...args: A) => {
      setBusy(true);
      setError(null);
      action(...args).then(
        () => setBusy(false),
        (e: unknown) => {
          setBusy(false);
          setError(e);
        },
      );
    },
    [action],
  );
  return { run, busy, error };
}

/** Prevents the native submit and runs `handler`. */
export const onSubmit = (handler: () => void) => (event: Event) => {
  event.preventDefault();
  handler();
};

export function formatTime(iso: string | null | undefined): string {
  if (!iso) return '—';
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : date.toLocaleString();
}

/** Parses a JSON object typed into a textarea; empty text is `{}`. */
export function parseObject(text: string, what: string): Record<string, unknown> {
  if (!text.trim()) return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new Error(`${what} is not valid JSON`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw new Error(`${what} must be a JSON object`);
  return parsed as Record<string, unknown>;
}

/**
 * A modal question (the native <dialog>: focus moves into it and stays until it closes; Escape
 * cancels). Focus starts on Cancel, so a stray Enter does not confirm.
 */
export function ConfirmDialog(props: {
  open: boolean;
  title: string;
  confirmLabel: string;
  busy?: boolean;
  onConfirm: () => void;
  onCancel: () => void;
  children: ComponentChildren;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const dialog = ref.current;
    if (!dialog) return;
    if (props.open && !dialog.open) dialog.showModal();
    if (!props.open && dialog.open) dialog.close();
  }, [props.open]);
  return (
    <dialog ref={ref} class="confirm" aria-labelledby="confirm-title" onClose={props.onCancel}>
      <h2 id="confirm-title">{props.title}</h2>
      {props.children}
      <div class="row">
        <button type="button" class="secondary" onClick={props.onCancel}>
          Cancel
        </button>
        <button type="button" disabled={props.busy} onClick={props.onConfirm}>
          {props.confirmLabel}
        </button>
      </div>
    </dialog>
  );
}

/** A link to the Messages page showing one message. */
export function MessageLink(props: { id: string }) {
  return (
    <Link to={`/messages?id=${encodeURIComponent(props.id)}`} class="mono">
      {props.id}
    </Link>
  );
}
