/**
 * The comparison peer for `bench/a2a.ts`: a minimal `@a2a-js/sdk` Express server with its in-memory
 * task store whose executor does the same work as Herald's `create-user` skill, on an in-memory
 * map (create the user or merge its properties), and answers with a `user-result` artifact.
 * Built from the SDK's published API only.
 */
import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import express from 'express';
import { Role, TaskState, type AgentCard, type Part } from '@a2a-js/sdk';
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore, type AgentExecutor } from '@a2a-js/sdk/server';
import { UserBuilder, agentCardHandler, jsonRpcHandler } from '@a2a-js/sdk/server/express';

type Properties = Record<string, string | number | boolean | null>;

function dataPart(data: Record<string, unknown>): Part {
  return { content: { $case: 'data', value: data }, metadata: undefined, filename: '', mediaType: '' };
}

function createUserExecutor(users: Map<string, { id: string; properties: Properties }>): AgentExecutor {
  return {
    async execute(context, bus) {
      const part = context.userMessage.parts.find((p) => p.content?.$case === 'data');
      const data = (part?.content?.$case === 'data' ? part.content.value : {}) as {
        projectUserId?: string;
        properties?: Properties;
      };
      const status = (state: TaskState) => ({ state, message: undefined, timestamp: new Date().toISOString() });
      bus.publish(
        AgentEvent.task({
          id: context.taskId,
          contextId: context.contextId,
          status: status(TaskState.TASK_STATE_SUBMITTED),
          artifacts: [],
          history: [context.userMessage],
          metadata: undefined,
        }),
      );
      const key = String(data.projectUserId);
      const user = users.get(key) ?? { id: randomUUID(), properties: {} };
      user.properties = { ...user.properties, ...(data.properties ?? {}) };
      users.set(key, user);
      bus.publish(
        AgentEvent.artifactUpdate({
          taskId: context.taskId,
          contextId: context.contextId,
          artifact: {
            artifactId: randomUUID(),
            name: 'user-result',
            description: '',
            parts: [dataPart({ userId: user.id, projectUserId: key, properties: user.properties })],
            metadata: undefined,
            extensions: [],
          },
          append: false,
          lastChunk: true,
          metadata: undefined,
        }),
      );
      bus.publish(
        AgentEvent.statusUpdate({
          taskId: context.taskId,
          contextId: context.contextId,
          status: status(TaskState.TASK_STATE_COMPLETED),
          metadata: undefined,
        }),
      );
      bus.finished();
    },
    async cancelTask() {},
  };
}

export async function startSdkPeer(port = 0): Promise<{ url: string; close(): Promise<void> }> {
  const card: AgentCard = {
    name: 'sdk-peer',
    description: 'create-user on @a2a-js/sdk with an in-memory store',
    supportedInterfaces: [],
    provider: undefined,
    version: '1.0.0',
    capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['application/json'],
    defaultOutputModes: ['application/json'],
    skills: [],
    signatures: [],
  };
  const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), createUserExecutor(new Map()));
  const app = express();
  app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: handler }));
  app.use('/a2a', jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(port, '127.0.0.1', () => resolve(s));
  });
  const address = server.address();
  const boundPort = typeof address === 'object' && address ? address.port : port;
  card.supportedInterfaces.push({
    url: `http://127.0.0.1:${boundPort}/a2a`,
    protocolBinding: 'JSONRPC',
    protocolVersion: '1.0',
    tenant: '',
  });
  return {
    url: `http://127.0.0.1:${boundPort}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

export const SDK_PEER_ROLE_USER = Role.ROLE_USER;

if (process.argv[1]?.endsWith('a2a-sdk-peer.ts')) {
  const peer = await startSdkPeer(Number(process.env.PORT ?? 0));
  console.log(JSON.stringify({ url: peer.url }));
}
