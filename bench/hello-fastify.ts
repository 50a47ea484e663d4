// The baseline for bench:users: a bare Fastify hello-world, same Node, same machine, same load, and the
// same logger at the same level as Herald (LOG_LEVEL, `warn` in the benchmarks).
import Fastify from 'fastify';

const app = Fastify({ logger: { level: process.env.LOG_LEVEL ?? 'warn' } });
app.post('/api/v1/users', async () => ({ hello: 'world' }));
app.get('/', async () => ({ hello: 'world' }));
await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' });
