import net from 'node:net';
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { registerErrorHandler } from '../../src/http/error-handler.js';
import { registerShutdownGate } from '../../src/http/shutdown-gate.js';
import { waitFor } from '../helpers/wait-for.js';

/**
 * The gate as `buildApp` registers it, on a real port (Fastify refuses `inject` once closing): a
 * request in flight keeps its kept-alive connection open through shutdown, and the next request on
 * that connection arrives while the app is closing.
 */
describe('requests during shutdown', () => {
  it("get Herald's JSON 503 with Retry-After and Connection: close, not the framework's bare 503", async () => {
    const app = Fastify({ return503OnClosing: false });
    registerShutdownGate(app);
    registerErrorHandler(app);
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let inFlight = false;
    app.get('/slow', async () => {
      inFlight = true;
      await held;
      return { ok: true };
    });
    app.get('/next', async () => ({ ok: true }));
    await app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = app.server.address() as net.AddressInfo;

    // Bytes the server has read from the client, to know the second request has arrived.
    let serverRead = 0;
    app.server.once('connection', (s: net.Socket) => s.on('data', (chunk: Buffer) => (serverRead += chunk.length)));
    const socket = net.connect(port, '127.0.0.1');
    let received = '';
    socket.on('data', (chunk: Buffer) => (received += chunk.toString('utf8')));
    const first = 'GET /slow HTTP/1.1\r\nHost: x\r\n\r\n';
    const next = 'GET /next HTTP/1.1\r\nHost: x\r\n\r\n';
    socket.write(first);
    await waitFor(async () => inFlight, { timeoutMs: 5000, what: 'the slow request to start' });
    const closing = app.close();
    // Fastify runs the preClose hooks (the gate closes) before it stops listening.
    await waitFor(() => !app.server.listening, { timeoutMs: 5000, what: 'the app to start closing' });
    socket.write(next);
    await waitFor(() => serverRead >= first.length + next.length, {
      timeoutMs: 5000,
      what: 'the second request to reach the server',
    });
    release();
    await closing;
    await waitFor(async () => received.includes('shutting down'), { timeoutMs: 5000, what: 'the second response' });
    socket.destroy();

    const [firstAnswer, second] = received.split(/(?=HTTP\/1\.1 )/);
    expect(firstAnswer).toMatch(/^HTTP\/1\.1 200/);
    expect(second).toMatch(/^HTTP\/1\.1 503/);
    expect(second).toMatch(/content-type: application\/json/i);
    expect(second).toMatch(/retry-after: 1\r\n/i);
    expect(second).toMatch(/x-error-reason: SHUTTING_DOWN/i);
    expect(second).toMatch(/connection: close/i);
    expect(second).toContain('{"error":"Server is shutting down, retry"}');
  });
});
