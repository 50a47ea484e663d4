import type { FastifyReply, FastifyRequest } from 'fastify';
import { openEventStream } from '../../http/event-stream.js';
import type { Db } from '../../db/database.js';
import { AppError } from '../../errors.js';
import { getTriggerStatus, type TriggerStatus } from './trigger-status.service.js';

const HEARTBEAT_MS = 15_000;
const TERMINAL = new Set(['completed', 'failed', 'canceled']);

export interface TriggerStreamOptions {
  /** Streams open at once per project on this instance (`TRIGGER_STREAMS_PER_PROJECT`); more answer 429. */
  perProject: number;
  /** How often a stream reads its trigger (`TRIGGER_STREAM_POLL_MS`). */
  pollMs: number;
  heartbeatMs?: number;
}

export interface TriggerStreams {
  /** Streams one trigger's progress to the request until the trigger ends, the client leaves or `closeAll`. */
  serve(
    db: Db,
    request: FastifyRequest,
    reply: FastifyReply,
    ids: { projectId: string; campaignId: string; triggerId: string },
  ): Promise<void>;
  /** Ends every open stream (server shutdown): clients see the stream end and may reconnect elsewhere. */
  closeAll(): void;
  /** Open streams per project (for tests and metrics). */
  open(projectId: string): number;
}

/**
 * Live trigger progress as Server-Sent Events. Each stream reads the trigger's status
 * (the same JSON as `GET …/triggers/{trigger_id}`) every `pollMs` and sends `event: progress`
 * when it changed, then `event: done` with the final status once the trigger has ended, and
 * closes. Reading the database (an indexed row and its batches) rather than in-process events
 * makes a stream see a trigger whichever instance runs its batches. A comment every 15 s keeps
 * proxies from closing an idle stream.
 */
export function createTriggerStreams(options: TriggerStreamOptions): TriggerStreams {
  const perProject = new Map<string, number>();
  const closers = new Set<() => void>();
  let closing = false;

  return {
    async serve(db, request, reply, { projectId, campaignId, triggerId }) {
      if (closing) throw new AppError('unavailable', 'SHUTTING_DOWN', 'Server is shutting down, retry');
      const count = perProject.get(projectId) ?? 0;
      if (count >= options.perProject)
        throw new AppError(
          'rate_limited',
          'TOO_MANY_TRIGGER_STREAMS',
          `At most ${options.perProject} trigger streams may be open at once per project`,
          { retryAfterSeconds: 5 },
        );
      // Counted before the first read, so concurrent requests cannot all pass the check.
      perProject.set(projectId, count + 1);
      let released = false;
      const release = () => {
        if (released) return;
        released = true;
        const left = (perProject.get(projectId) ?? 1) - 1;
        if (left > 0) perProject.set(projectId, left);
        else perProject.delete(projectId);
      };
      let first: TriggerStatus;
      try {
        // A refusal (unknown campaign or trigger) is still an ordinary JSON error reply.
        first = await getTriggerStatus(db, projectId, campaignId, triggerId);
      } catch (error) {
        release();
        throw error;
      }

      const raw = openEventStream(reply);

      let last = '';
      let poll: NodeJS.Timeout | undefined;
      const heartbeat = setInterval(() => raw.write(': keep-alive\n\n'), options.heartbeatMs ?? HEARTBEAT_MS);
      const end = () => {
        clearTimeout(poll);
        clearInterval(heartbeat);
        closers.delete(end);
        release();
        if (!raw.writableEnded) raw.end();
      };
      closers.add(end);
      raw.on('close', end);

      const send = (status: TriggerStatus): boolean => {
        const data = JSON.stringify(status);
        if (data !== last) raw.write(`event: progress\ndata: ${data}\n\n`);
        last = data;
        if (!TERMINAL.has(status.state)) return false;
        raw.write(`event: done\ndata: ${data}\n\n`);
        end();
        return true;
      };
      const tick = async () => {
        if (released) return;
        try {
          if (send(await getTriggerStatus(db, projectId, campaignId, triggerId))) return;
        } catch (error) {
          if (released) return;
          if (error instanceof AppError && error.kind === 'not_found') {
            // The campaign (and its triggers) was deleted while watched.
            raw.write(`event: error\ndata: ${JSON.stringify({ error: error.message })}\n\n`);
            end();
            return;
          }
          request.log.warn({ err: error, triggerId }, 'reading a streamed trigger failed; retrying');
        }
        if (!released) poll = setTimeout(() => void tick(), options.pollMs);
      };
      if (!send(first)) poll = setTimeout(() => void tick(), options.pollMs);
    },
    closeAll() {
      closing = true;
      for (const end of [...closers]) end();
    },
    open: (projectId) => perProject.get(projectId) ?? 0,
  };
}
