import { DEFAULT_PRINCIPAL } from '../config/config.references.js';
import type { SessionOrigin, SessionOriginPolicy } from '../sessions/index.js';
import type { Inbound } from '../turns/index.js';
import type { AgentRoster } from './agent-roster.js';

/**
 * Who a new session belongs to and which agent runs it, for the message path
 * and for POST /sessions (DECISIONS §17-18): the agent asked for, else the
 * binding that matches, else the default; the owner is the principal that
 * asked, except that a platform channel's sessions (`channel:<name>`) belong
 * to the matching binding's `owner` when it names one.
 */
export function agentOrigins(roster: AgentRoster): {
  originOf: (inbound: Inbound) => SessionOrigin;
  sessionOrigin: SessionOriginPolicy;
} {
  return {
    originOf: (inbound) => {
      // Work the gateway creates (tasks, cron) is the default principal's; the webhook channel's is its own (§18).
      const id = inbound.source === 'webhook' ? 'channel:webhook' : DEFAULT_PRINCIPAL;
      const principal = inbound.principal ?? { id, role: 'admin' as const };
      const source = {
        channel: inbound.channel,
        platform: inbound.platform,
        chatId: inbound.chatId,
        userId: inbound.userId,
        principal: principal.id,
      };
      const agent = roster.choose(source, principal, inbound.agent);
      const owner = principal.id.startsWith('channel:') ? roster.bound(source)?.owner : null;
      return { agent, principal: owner ?? principal.id };
    },
    sessionOrigin: ({ principal, channel, agent }) => ({
      agent: roster.choose({ channel, principal: principal.id }, principal, agent),
      principal: principal.id,
    }),
  };
}
