import type { AgentCard } from '@a2a-js/sdk';
import { packageVersion } from '../lib/version.js';

/** The protocol version the card declares for its JSON-RPC interface: the one the SDK in use implements. */
export const A2A_VERSION = '1.0';

/** The name of the card's one security scheme. */
const BEARER = 'bearer';

/** The JSON-RPC endpoint of an agent, relative to the gateway's origin: `/a2a` (default agent) or `/a2a/<agent>`. */
export function endpointPath(agent: string, isDefault: boolean): string {
  return isDefault ? '/a2a' : `/a2a/${encodeURIComponent(agent)}`;
}

/**
 * The agent card of one agent (DECISIONS §22): its JSON-RPC interface at `origin` + `/a2a[/<agent>]`, streaming,
 * one general skill (the card is a public document: it names no tools, which `GET /api/v1/agents` shows to the
 * token holders who may use the agent), and HTTP bearer auth required (the gateway's api tokens).
 */
export function agentCardOf(agent: string, options: { origin: string; isDefault: boolean }): AgentCard {
  const url = options.origin + endpointPath(agent, options.isDefault);
  const who = options.isDefault ? `the default agent ("${agent}")` : `the agent "${agent}"`;
  return {
    name: options.isDefault ? 'Gatehouse' : `Gatehouse ${agent}`,
    description:
      `${who} of a Gatehouse gateway: send it a message and it answers, with the tools its administrator ` +
      'allows it. A task is one turn of the agent; a context is a conversation that keeps its history.',
    supportedInterfaces: [{ url, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: A2A_VERSION }],
    provider: { organization: 'Gatehouse', url: options.origin },
    version: packageVersion(),
    capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
    securitySchemes: {
      [BEARER]: {
        scheme: {
          $case: 'httpAuthSecurityScheme',
          value: {
            description: "One of the gateway's api tokens (Authorization: Bearer <token>)",
            scheme: 'Bearer',
            bearerFormat: '',
          },
        },
      },
    },
    securityRequirements: [{ schemes: { [BEARER]: { list: [] } } }],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [
      {
        id: 'conversation',
        name: 'Conversation',
        description: `Answers a message in a conversation (a context), with ${who}'s tools.`,
        tags: ['chat', agent],
        examples: [],
        inputModes: ['text/plain'],
        outputModes: ['text/plain'],
        securityRequirements: [],
      },
    ],
    signatures: [],
  };
}
