import { createRequire } from 'node:module';
import { SKILLS } from './skills/registry.js';

const HERALD_VERSION = (createRequire(import.meta.url)('../../package.json') as { version: string }).version;

/** What varies between cards: where `/a2a` is, and (for the extended card) whose project it is. */
export interface CardModel {
  endpointUrl: string;
  description: string;
}

const API_KEY_DESCRIPTION = 'A secret API key of your Herald project (svc_sk_...). The project is derived from the key.';
const MODES = ['application/json'];

const skills = () =>
  [...SKILLS.values()].map(({ descriptor }) => ({ ...descriptor, inputModes: MODES, outputModes: MODES }));

export const PUBLIC_DESCRIPTION =
  'Herald engagement backend: create users, track events, send push notifications and trigger campaigns. Put the skill in a message part: data.skill plus the skill fields.';

/** The A2A v1.0 card (A8): the spec's fields plus the ones v1.0 requires. */
export function v1Card(model: CardModel): Record<string, unknown> {
  return {
    name: 'Herald',
    description: model.description,
    supportedInterfaces: [{ url: model.endpointUrl, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
    version: HERALD_VERSION,
    capabilities: { streaming: true, pushNotifications: true, extendedAgentCard: true },
    securitySchemes: { apiKey: { apiKeySecurityScheme: { name: 'X-API-Key', location: 'header', description: API_KEY_DESCRIPTION } } },
    securityRequirements: [{ schemes: { apiKey: { list: [] } } }],
    defaultInputModes: MODES,
    defaultOutputModes: MODES,
    skills: skills(),
  };
}

/** The public card: v1 with the three top-level fields a v0.3 client looks for (A8). */
export function publicCard(model: CardModel): Record<string, unknown> {
  return { ...v1Card(model), protocolVersion: '0.3.0', url: model.endpointUrl, preferredTransport: 'JSONRPC' };
}

/** The v0.3 card shape, for `agent/getAuthenticatedExtendedCard`. */
export function v0_3Card(model: CardModel): Record<string, unknown> {
  return {
    protocolVersion: '0.3.0',
    name: 'Herald',
    description: model.description,
    url: model.endpointUrl,
    preferredTransport: 'JSONRPC',
    version: HERALD_VERSION,
    capabilities: { streaming: true, pushNotifications: true, stateTransitionHistory: false },
    securitySchemes: { apiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key', description: API_KEY_DESCRIPTION } },
    security: [{ apiKey: [] }],
    defaultInputModes: MODES,
    defaultOutputModes: MODES,
    skills: skills(),
    supportsAuthenticatedExtendedCard: true,
  };
}

export function extendedDescription(projectName: string, projectId: string): string {
  return `${PUBLIC_DESCRIPTION} Authenticated for project "${projectName}" (${projectId}).`;
}
