export { AgentRoster, agentProfiles, toolAllowed, type AgentProfile, type SessionSource } from './agent-roster.js';
export { agentsModule } from './agents.module.js';
export { agentOrigins } from './agent-origins.js';
export { openAgents } from './agents.open.js';
