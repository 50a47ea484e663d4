/**
 * The one internal model of the agent interface. Both protocol versions decode into it and encode
 * out of it (`versions/v1.ts`, `versions/v0_3.ts`); nothing else knows a wire spelling.
 * Glossary: a *task* is an A2A task only; a *message* is an A2A message.
 */

export const TASK_STATES = [
  'submitted',
  'working',
  'completed',
  'failed',
  'canceled',
  'rejected',
  'input-required',
  'auth-required',
] as const;
export type TaskState = (typeof TASK_STATES)[number];

const TERMINAL: ReadonlySet<TaskState> = new Set(['completed', 'failed', 'canceled', 'rejected']);
const INTERRUPTED: ReadonlySet<TaskState> = new Set(['input-required', 'auth-required']);

export const isTerminal = (state: TaskState): boolean => TERMINAL.has(state);
/** A stream or a blocking send ends at a terminal or interrupted state. */
export const isFinal = (state: TaskState): boolean => TERMINAL.has(state) || INTERRUPTED.has(state);
export const TERMINAL_STATES: readonly TaskState[] = [...TERMINAL];

/** `TASK_STATE_INPUT_REQUIRED` → `input-required`, and the v0.3 spelling as is; else undefined (rule `a2a-v1-wire`). */
export function parseTaskState(value: string): TaskState | undefined {
  const lower = value.startsWith('TASK_STATE_')
    ? value.slice('TASK_STATE_'.length).toLowerCase().replace(/_/g, '-')
    : value;
  return (TASK_STATES as readonly string[]).includes(lower) ? (lower as TaskState) : undefined;
}

export type Role = 'user' | 'agent' | 'unspecified';

export type JsonObject = Record<string, unknown>;

/** One part; exactly one of `text`, `data`, `raw` (base64) or `url` is set. */
export interface Part {
  text?: string;
  data?: unknown;
  raw?: string;
  url?: string;
  filename?: string;
  mediaType?: string;
  metadata?: JsonObject;
}

export interface Message {
  messageId: string;
  role: Role;
  parts: Part[];
  contextId?: string;
  taskId?: string;
  metadata?: JsonObject;
  extensions?: string[];
  referenceTaskIds?: string[];
}

export interface TaskStatus {
  state: TaskState;
  message?: Message;
  /** Epoch milliseconds. */
  timestamp: number;
}

export interface Artifact {
  artifactId: string;
  name: string;
  parts: Part[];
  description?: string;
  metadata?: JsonObject;
}

export interface Task {
  id: string;
  contextId: string;
  status: TaskStatus;
  artifacts: Artifact[];
  history: Message[];
  metadata?: JsonObject;
}

/** A status change of a task, as streams and callbacks carry it. `seq` orders a task's changes. */
export interface StatusUpdate {
  taskId: string;
  contextId: string;
  seq: number;
  status: TaskStatus;
}

export interface AuthenticationInfo {
  scheme: string;
  credentials?: string;
}

/** The protocol version a push config was registered with decides its callback body (rule `a2a-webhooks`). */
export type ProtocolVersion = '1.0' | '0.3';

export interface PushConfigInput {
  id?: string;
  url: string;
  token?: string;
  authentication?: AuthenticationInfo;
}

export interface PushConfig extends PushConfigInput {
  id: string;
  taskId: string;
}

export interface SendInput {
  message: Message;
  pushConfig?: PushConfigInput;
  historyLength?: number;
  /** v1 `returnImmediately` / v0.3 `blocking: false`: accepted, but built-in skills always finish first. */
  returnImmediately?: boolean;
  metadata?: JsonObject;
}

export interface ListTasksInput {
  contextId?: string;
  state?: TaskState;
  pageSize: number;
  pageToken?: string;
  historyLength?: number;
  statusTimestampAfter?: number;
  includeArtifacts: boolean;
}

export interface ListTasksResult {
  tasks: Task[];
  nextPageToken: string;
  pageSize: number;
  totalSize: number;
}

/** What an agent card varies by: where `/a2a` is and the description (public, or the extended card's). */
export interface CardModel {
  endpointUrl: string;
  description: string;
}
