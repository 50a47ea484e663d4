import { createRequire } from 'node:module';
import type { CardModel } from './model.js';
import { SKILLS } from './skills/registry.js';

const HERALD_VERSION = (createRequire(import.meta.url)('../../package.json') as { version: string }).version;

/** What varies between cards: where `/a2a` is, and (for the extended card) whose project it is. */

const API_KEY_DESCRIPTION =
  'A secret API key of your Herald project (svc_sk_...). The project is derived from the key.';
const MODES = ['application/json'];

const skills = () =>
  [...SKILLS.values()].map(({ descriptor }) => ({ ...descriptor, inputModes: MODES, outputModes: MODES }));

export const PUBLIC_DESCRIPTION =
  'Herald engagement backend: create users, track events, send push notifications and trigger campaigns. Put the skill in a message part: data.skill plus the skill fields.';

const API_KEY_V1 = {
  apiKeySecurityScheme: { name: 'X-API-Key', location: 'header', description: API_KEY_DESCRIPTION },
};
const API_KEY_V0_3 = { type: 'apiKey', in: 'header', name: 'X-API-Key', description: API_KEY_DESCRIPTION };

/** The A2A v1.0 card (rule `agent-card`): the contract's fields plus the ones v1.0 requires. */
export function v1Card(model: CardModel): Record<string, unknown> {
  return {
    name: 'Herald',
    description: model.description,
    supportedInterfaces: [{ url: model.endpointUrl, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
    version: HERALD_VERSION,
    capabilities: { streaming: true, pushNotifications: true, extendedAgentCard: true },
    securitySchemes: { apiKey: API_KEY_V1 },
    securityRequirements: [{ schemes: { apiKey: { list: [] } } }],
    defaultInputModes: MODES,
    defaultOutputModes: MODES,
    skills: skills(),
  };
}

/** The v0.3 card (A2A v0.3.0 `AgentCard`), for `agent/getAuthenticatedExtendedCard`. */
export function v0_3Card(model: CardModel): Record<string, unknown> {
  return {
    protocolVersion: '0.3.0',
    name: 'Herald',
    description: model.description,
    url: model.endpointUrl,
    preferredTransport: 'JSONRPC',
    additionalInterfaces: [{ url: model.endpointUrl, transport: 'JSONRPC' }],
    version: HERALD_VERSION,
    capabilities: { streaming: true, pushNotifications: true, stateTransitionHistory: false },
    securitySchemes: { apiKey: API_KEY_V0_3 },
    security: [{ apiKey: [] }],
    defaultInputModes: MODES,
    defaultOutputModes: MODES,
    skills: skills(),
    supportsAuthenticatedExtendedCard: true,
  };
}

/**
 * The public card, read by clients of either version: every v1.0 field and every v0.3 field. The
 * two share `capabilities` and `securitySchemes` with different contents, so those carry the
 * union (each version's readers ignore the other's keys, as both specs ask of unknown fields).
 */
export function publicCard(model: CardModel): Record<string, unknown> {
  const v1 = v1Card(model);
  const v0_3 = v0_3Card(model);
  return {
    ...v1,
    ...v0_3,
    description: model.description,
    capabilities: { ...(v0_3.capabilities as object), ...(v1.capabilities as object) },
    securitySchemes: { apiKey: { ...API_KEY_V0_3, ...API_KEY_V1 } },
    skills: v1.skills,
  };
}

export function extendedDescription(projectName: string, projectId: string): string {
  return `${PUBLIC_DESCRIPTION} Authenticated for project "${projectName}" (${projectId}).`;
}
