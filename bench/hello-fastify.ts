// The baseline for bench:users: a bare Fastify hello-world, same Node, same machine, same load.
import Fastify from 'fastify';

const app = Fastify({ logger: false });
app.post('/api/v1/users', async () => ({ hello: 'world' }));
app.get('/', async () => ({ hello: 'world' }));
await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' });
