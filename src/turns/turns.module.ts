import type { EventBus } from '../events/index.js';
import { publishWrites } from '../http/publish-writes.js';
import type { GatewayModule } from '../module.js';
import type { SessionService } from '../sessions/index.js';
import type { MessagePath } from './message-path.js';
import { messageRoutes } from './message.routes.js';
import { sessionMessageRoutes } from './session-messages.routes.js';

/**
 * The message path as the gateway installs it: its entry routes (POST
 * /message, POST /sessions/{id}/messages, the ledger's routes); it starts
 * first (recovering this instance's work) and its running turns get the
 * shutdown's grace.
 */
export function turnsModule(deps: {
  messages: MessagePath;
  sessions: Pick<SessionService, 'require'>;
  replyTimeoutMs: number;
  bus: Pick<EventBus, 'publisher'>;
}): GatewayModule {
  const { messages } = deps;
  return {
    name: 'turns',
    routes: [
      ...publishWrites(sessionMessageRoutes(deps), deps.bus.publisher('sessions')),
      ...messageRoutes(messages),
      ...messages.routes(),
    ],
    async start() {
      await messages.start();
    },
    stop: { turns: (graceMs) => messages.shutdown(graceMs) },
  };
}
