import { describe, expect, it } from 'vitest';
import { buildTestContext } from '../helpers/test-app.js';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { waitFor } from '../helpers/wait-for.js';
import { configureProviders, fcmToken, pushOverrides, registerDevice, useFakeProviders } from '../push/push-helpers.js';
import { createCampaign, createUser, json, runFanout, triggerOk, triggerStatus } from './campaign-helpers.js';

type Headers = Record<string, string>;
interface SseEvent {
  event: string;
  data: { state: string } & Record<string, unknown>;
}

/** Reads an SSE response into events as they arrive; `ended` resolves when the server ends it. */
function readEvents(res: Response): { events: SseEvent[]; comments: number; ended: Promise<void> } {
  const out = { events: [] as SseEvent[], comments: 0, ended: Promise.resolve() };
  out.ended = (async () => {
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      for await (const chunk of res.body! as AsyncIterable<Uint8Array>) {
        buffer += decoder.decode(chunk, { stream: true });
        let cut: number;
        while ((cut = buffer.indexOf('\n\n')) >= 0) {
          const frame = buffer.slice(0, cut);
          buffer = buffer.slice(cut + 2);
          if (frame.startsWith(':')) out.comments++;
          const event = /^event: (.*)$/m.exec(frame)?.[1];
          const data = /^data: (.*)$/m.exec(frame)?.[1];
          if (event && data) out.events.push({ event, data: JSON.parse(data) as SseEvent['data'] });
        }
      }
    } catch (error) {
      if ((error as Error).name !== 'AbortError') throw error;
    }
  })();
  return out;
}

describe.each(TEST_DIALECTS)('trigger progress stream on %s', (dialect) => {
  const fakes = useFakeProviders();
  const ctx = useTestContext(dialect, {
    overrides: pushOverrides(fakes),
    env: { TRIGGER_STREAM_POLL_MS: '50', TRIGGER_STREAMS_PER_PROJECT: '2' },
  });
  let base: string | undefined;
  const url = async (path: string) => {
    base ??= await ctx().app.listen({ port: 0, host: '127.0.0.1' });
    return `${base}${path}`;
  };
  const open = async (campaignId: string, triggerId: string, headers: Headers, signal?: AbortSignal) =>
    fetch(await url(`/api/v1/campaigns/${campaignId}/triggers/${triggerId}/stream`), { headers, signal });

  async function queuedTrigger(tag: string) {
    const { secret } = await ctx().newProject(tag);
    await configureProviders(ctx(), secret, fakes());
    await createUser(ctx(), 'ada', {}, secret);
    await registerDevice(ctx(), secret, 'ada', { fcm_token: fcmToken() });
    const campaignId = await createCampaign(ctx(), {}, secret);
    const triggerId = await triggerOk(ctx(), campaignId, { audience: { broadcast: true } }, secret);
    return { secret, campaignId, triggerId };
  }

  it('sends progress at once, again as the trigger changes, then done with the final status, and ends', async () => {
    const { secret, campaignId, triggerId } = await queuedTrigger('progress');
    const res = await open(campaignId, triggerId, secret);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const stream = readEvents(res);
    await waitFor(() => stream.events.length >= 1, { what: 'the first progress event' });
    expect(stream.events[0]).toMatchObject({ event: 'progress', data: { trigger_id: triggerId, state: 'queued' } });
    await runFanout(ctx());
    await stream.ended;
    const final = await triggerStatus(ctx(), campaignId, triggerId, secret);
    expect(final.state).toBe('completed');
    const last = stream.events.slice(-2);
    expect(last.map((e) => e.event)).toEqual(['progress', 'done']);
    expect(last[1]!.data).toEqual(final);
    expect(last[0]!.data).toEqual(final);
    // Only changes are sent: no two progress events in a row carry the same status.
    const progress = stream.events.filter((e) => e.event === 'progress').map((e) => JSON.stringify(e.data));
    expect(new Set(progress).size).toBe(progress.length);
  });

  it('ends at once with done for a trigger that has already ended', async () => {
    const { secret, campaignId, triggerId } = await queuedTrigger('ended');
    await runFanout(ctx());
    const stream = readEvents(await open(campaignId, triggerId, secret));
    await stream.ended;
    expect(stream.events.map((e) => [e.event, e.data.state])).toEqual([
      ['progress', 'completed'],
      ['done', 'completed'],
    ]);
  });

  it('refuses streams past the per-project cap with 429 and frees a slot when a client leaves', async () => {
    const { secret, campaignId, triggerId } = await queuedTrigger('cap');
    const leaving = new AbortController();
    const first = await open(campaignId, triggerId, secret, leaving.signal);
    const second = await open(campaignId, triggerId, secret);
    expect([first.status, second.status]).toEqual([200, 200]);
    const third = await open(campaignId, triggerId, secret);
    expect(third.status).toBe(429);
    expect(((await third.json()) as { error: string }).error).toMatch(/At most 2 trigger streams/);
    // Another project has its own allowance.
    const other = await queuedTrigger('cap-other');
    const elsewhere = await open(other.campaignId, other.triggerId, other.secret);
    expect(elsewhere.status).toBe(200);
    leaving.abort();
    const again = await waitFor(
      async () => {
        const res = await open(campaignId, triggerId, secret);
        if (res.status === 200) return res;
        await res.body?.cancel();
        return undefined;
      },
      { what: 'a slot freed by the client that left' },
    );
    for (const res of [second, elsewhere, again]) await res.body?.cancel();
  });

  it('answers 404 for another project or an unknown trigger and 401 for the public key, before streaming', async () => {
    const { secret, campaignId, triggerId } = await queuedTrigger('isolation');
    const stranger = await ctx().newProject('stranger');
    const denied = await open(campaignId, triggerId, stranger.secret);
    expect(denied.status).toBe(404);
    expect(denied.headers.get('content-type')).toMatch(/application\/json/);
    expect((await open(campaignId, 'no-such-trigger', secret)).status).toBe(404);
    expect((await open(campaignId, triggerId, ctx().public)).status).toBe(401);
    const plain = await json(
      ctx(),
      'GET',
      `/api/v1/campaigns/${campaignId}/triggers/${triggerId}/stream`,
      undefined,
      stranger.secret,
    );
    expect(plain.statusCode).toBe(404);
  });

  it('ends open streams when the server shuts down', async () => {
    const own = await buildTestContext(dialect, { env: { TRIGGER_STREAM_POLL_MS: '50' } });
    try {
      const origin = await own.app.listen({ port: 0, host: '127.0.0.1' });
      await createUser(own, 'u');
      const campaignId = await createCampaign(own);
      const triggerId = await triggerOk(own, campaignId, { audience: { broadcast: true } });
      const res = await fetch(`${origin}/api/v1/campaigns/${campaignId}/triggers/${triggerId}/stream`, {
        headers: own.secret,
      });
      const stream = readEvents(res);
      await waitFor(() => stream.events.length >= 1, { what: 'the first event' });
      const started = Date.now();
      await own.app.close();
      await stream.ended;
      expect(Date.now() - started).toBeLessThan(5000);
      expect(stream.events.map((e) => e.event)).toEqual(['progress']);
    } finally {
      await own.herald.close();
      await own.database.destroy();
    }
  });
});
