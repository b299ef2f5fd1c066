/**
 * The chat page's small decisions, kept apart from its rendering: whose session the page opens on, who a
 * message is shown as, which tool call a paused reply waits on, and whether the gateway can be reached.
 */
import { useEffect, useState } from 'preact/hooks';
import { ApiError } from '../../errors';
import type { LiveFeed } from '../../page';
import type { PendingCallView } from '../approvals/pending-call';

/** The channel of the sessions the dashboard's chat creates: the user's own conversations. */
export const DASHBOARD_CHANNEL = 'dashboard';

/** True for a session the dashboard's chat started (not a cron job's, a channel's or an API client's). */
export function isOwnChat(session: { channel: string } | undefined): boolean {
  return session?.channel === DASHBOARD_CHANNEL;
}

/**
 * Who a history entry is shown as: the user's own messages as "You" only in their own chat; elsewhere (a cron
 * job's prompts, a channel's users) a user message is the session's "User", not the person reading.
 */
export function authorLabel(role: string, own: boolean): string {
  if (role === 'user') return own ? 'You' : 'User';
  if (role === 'assistant') return 'Agent';
  return role;
}

/** The call a paused reply waits on: the last of its tool calls without a result. */
export function pendingCallOf(message: {
  tool_calls?: ReadonlyArray<{ id: string; name: string; arguments: string; result?: unknown }>;
}): PendingCallView | undefined {
  const calls = message.tool_calls ?? [];
  for (let i = calls.length - 1; i >= 0; i--) {
    const call = calls[i]!;
    if (!('result' in call) || call.result === undefined) {
      return { id: call.id, name: call.name, arguments: call.arguments };
    }
  }
  return undefined;
}

/** True for an error that never reached the gateway (refused connection, network down): not an API answer. */
export function isUnreachable(error: unknown): boolean {
  return !(error instanceof ApiError) && error instanceof TypeError;
}

/** How often the live connection is looked at, and how many looks in a row without it mean the gateway is down. */
const LOOK_MS = 1000;
const LOOKS_DOWN = 2;

/**
 * Whether the gateway can be reached: false once the live connection has been down for two looks in a row (a
 * page just opened is not called down while the socket signs in) or a request could not reach it (`markDown`);
 * true again as soon as the live connection is back.
 */
export function useGatewayReachable(live: LiveFeed): { reachable: boolean; markDown: () => void } {
  const [reachable, setReachable] = useState(true);
  useEffect(() => {
    let downLooks = 0;
    const timer = setInterval(() => {
      if (live.connected) {
        downLooks = 0;
        setReachable(true);
      } else if (++downLooks >= LOOKS_DOWN) {
        setReachable(false);
      }
    }, LOOK_MS);
    return () => clearInterval(timer);
  }, [live]);
  return { reachable, markDown: () => setReachable(false) };
}
