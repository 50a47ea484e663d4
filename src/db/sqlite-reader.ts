import { Worker } from 'node:worker_threads';
import {
  Kysely,
  SqliteAdapter,
  SqliteIntrospector,
  SqliteQueryCompiler,
  type CompiledQuery,
  type DatabaseConnection,
  type Driver,
  type QueryResult,
} from 'kysely';
import type { Database } from './database.js';
import type { ReadAnswer, ReadRequest, SqliteReaderThreadData } from './sqlite-reader-thread.js';
import { queryTimeoutError } from './statement-timeout.js';

/*
 * Long reads of the embedded database (a broadcast dry run's counts: a pass over one project's users)
 * on a thread with its own read-only connection. On the server's connection such a statement runs on
 * the event loop, where nothing can stop it, and holds every project's requests for its whole length
 * (about 1.7 s per million users, docs/benchmarks.md "Dry-run counts on SQLite"). Here the event loop
 * only waits for the answer, and a statement past `timeoutMs` answers 422 QUERY_TIMEOUT as PostgreSQL's
 * statement timeout does. better-sqlite3 cannot interrupt a statement, so the stopped thread runs it to
 * its end before it exits; statements wait for that, so at most one such thread ever runs.
 */

const threadFile = new URL(`./sqlite-reader-thread.${import.meta.url.endsWith('.ts') ? 'ts' : 'js'}`, import.meta.url);

interface Pending {
  request: ReadRequest;
  resolve: (result: QueryResult<unknown>) => void;
  reject: (error: unknown) => void;
  timer?: NodeJS.Timeout;
}

export interface SqliteReaderOptions {
  file: string;
  writeGate: Int32Array;
  readerBusy: Int32Array;
  /** 0: none. */
  timeoutMs: number;
  /** The setting a timeout names (DATABASE_DRY_RUN_TIMEOUT_MS). */
  setting: string;
}

class ReaderThread {
  readonly #options: SqliteReaderOptions;
  #worker: Worker | undefined;
  /** Settles when a stopped thread has finished its statement and exited. */
  #exiting: Promise<void> | undefined;
  readonly #pending = new Map<number, Pending>();
  #nextId = 0;
  /** Settles once the current thread has opened its connection (or ended). */
  #started: Promise<void> = Promise.resolve();
  #closed = false;

  constructor(options: SqliteReaderOptions) {
    this.#options = options;
  }

  async run(query: CompiledQuery): Promise<QueryResult<unknown>> {
    const { timeoutMs } = this.#options;
    // As PostgreSQL's timeout does not count the wait for a pooled connection, this one starts once a
    // stopped thread has gone and a new one has opened its connection.
    while (this.#exiting) await this.#exiting;
    if (!this.#worker) this.#worker = this.#start();
    await this.#started;
    if (this.#closed) throw new Error('the database is closed');
    return new Promise((resolve, reject) => {
      const request = { id: ++this.#nextId, sql: query.sql, parameters: query.parameters };
      const pending: Pending = { request, resolve, reject };
      if (timeoutMs > 0) pending.timer = setTimeout(() => this.#timedOut(request.id), timeoutMs);
      this.#pending.set(request.id, pending);
      this.#post(request);
    });
  }

  #post(request: ReadRequest): void {
    if (!this.#worker) this.#worker = this.#start();
    this.#worker.ref();
    this.#worker.postMessage(request);
  }

  #start(): Worker {
    const { file, writeGate, readerBusy } = this.#options;
    const data: SqliteReaderThreadData = { file, writeGate, readerBusy };
    const worker = new Worker(threadFile, { workerData: data });
    let started = (): void => undefined;
    this.#started = new Promise((resolve) => (started = resolve));
    worker.on('message', (answer: ReadAnswer | 'ready') => {
      if (answer === 'ready') started();
      else this.#answer(answer);
    });
    // A stopped thread's end concerns no one: what it held was given to the next thread.
    worker.on('error', (error) => {
      if (this.#worker === worker) this.#failAll(error);
    });
    worker.on('exit', () => {
      started();
      if (this.#worker !== worker) return;
      this.#worker = undefined;
      this.#failAll(new Error('the database reader thread exited'));
    });
    return worker;
  }

  #answer(answer: ReadAnswer): void {
    const pending = this.#pending.get(answer.id);
    if (!pending) return; // timed out meanwhile
    this.#settle(answer.id);
    if ('error' in answer) pending.reject(Object.assign(new Error(answer.error.message), { code: answer.error.code }));
    else pending.resolve({ rows: answer.rows });
  }

  #settle(id: number): void {
    clearTimeout(this.#pending.get(id)?.timer);
    this.#pending.delete(id);
    if (this.#pending.size === 0) this.#worker?.unref();
  }

  #timedOut(id: number): void {
    const pending = this.#pending.get(id);
    if (!pending) return;
    this.#settle(id);
    const { timeoutMs, setting } = this.#options;
    pending.reject(queryTimeoutError(timeoutMs, setting));
    // The thread may be running that very statement: stop it, and give what else it held to the next one.
    const stopped = this.#worker;
    if (!stopped) return;
    this.#worker = undefined;
    const exited = stopped.terminate().catch(() => undefined);
    this.#exiting = exited.then(() => {
      this.#exiting = undefined;
      if (!this.#closed) for (const other of this.#pending.values()) this.#post(other.request);
    });
  }

  #failAll(error: unknown): void {
    for (const [id, pending] of [...this.#pending]) {
      this.#settle(id);
      pending.reject(error);
    }
  }

  async stop(): Promise<void> {
    this.#closed = true;
    const worker = this.#worker;
    this.#worker = undefined;
    this.#failAll(new Error('the database is closed'));
    await worker?.terminate();
    await this.#exiting;
  }
}

function readerDriver(thread: ReaderThread): Driver {
  const connection: DatabaseConnection = {
    executeQuery: <R>(query: CompiledQuery) => thread.run(query) as Promise<QueryResult<R>>,
    streamQuery: () => {
      throw new Error('the database reader streams nothing');
    },
  };
  const noTransactions = () => Promise.reject(new Error('the database reader runs single statements, no transactions'));
  return {
    init: async () => undefined,
    acquireConnection: async () => connection,
    beginTransaction: noTransactions,
    commitTransaction: noTransactions,
    rollbackTransaction: noTransactions,
    releaseConnection: async () => undefined,
    destroy: () => thread.stop(),
  };
}

/** A Kysely handle whose statements run on the reader thread (one statement each, no transactions). */
export function openSqliteReader(options: SqliteReaderOptions): Kysely<Database> {
  const thread = new ReaderThread(options);
  return new Kysely<Database>({
    dialect: {
      createAdapter: () => new SqliteAdapter(),
      createDriver: () => readerDriver(thread),
      createIntrospector: (db) => new SqliteIntrospector(db),
      createQueryCompiler: () => new SqliteQueryCompiler(),
    },
  });
}
