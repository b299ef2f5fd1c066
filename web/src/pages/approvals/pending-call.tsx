/**
 * What a paused turn waits on, shown where a person decides it (the Approvals inbox and the chat's approval
 * card): the tool's name and its arguments as pretty-printed JSON, long values folded until "Show more" —
 * nobody should approve a call without seeing what it would do. Also the session a turn belongs to, by title.
 */
import { useState } from 'preact/hooks';
import './approvals.css';

/** A string value longer than this is cut while folded. */
const FOLD_VALUE_CHARS = 160;
/** A folded argument block shows at most this many lines. */
const FOLD_LINES = 12;

/** A tool call waiting for a decision, as the API reports it (`Turn.pending_tool_call`, a Message's `tool_calls`). */
export interface PendingCallView {
  /** The call's id, when known (to show it once). */
  id?: string;
  name: string;
  /** The JSON text of the arguments, as the model produced it. */
  arguments: string;
}

/** The arguments pretty-printed (raw text when they are not JSON), in full and folded. */
export function foldArguments(text: string): { full: string; folded: string } {
  let value: unknown;
  try {
    value = JSON.parse(text || '{}');
  } catch {
    const lines = text.split('\n');
    const folded = lines.length > FOLD_LINES ? `${lines.slice(0, FOLD_LINES).join('\n')}\n…` : text;
    return {
      full: text,
      folded: folded.length > FOLD_VALUE_CHARS * 4 ? `${folded.slice(0, FOLD_VALUE_CHARS * 4)}…` : folded,
    };
  }
  const full = JSON.stringify(value, null, 2);
  const cut = JSON.stringify(
    value,
    (_key, inner: unknown) =>
      typeof inner === 'string' && inner.length > FOLD_VALUE_CHARS ? `${inner.slice(0, FOLD_VALUE_CHARS)}…` : inner,
    2,
  );
  const lines = cut.split('\n');
  return { full, folded: lines.length > FOLD_LINES ? `${lines.slice(0, FOLD_LINES).join('\n')}\n  …` : cut };
}

/** The tool's name and its arguments, folded when long (a "Show more" button unfolds them). */
export function PendingCall({ call, idPrefix }: { call: PendingCallView; idPrefix: string }) {
  const [open, setOpen] = useState(false);
  const { full, folded } = foldArguments(call.arguments);
  const foldable = full !== folded;
  const argsId = `${idPrefix}-args`;
  return (
    <div class="pending-call" data-tool={call.name}>
      <code class="pending-tool">{call.name}</code>
      <pre id={argsId} class="pending-args" aria-label={`Arguments of ${call.name}`}>
        {open || !foldable ? full : folded}
      </pre>
      {foldable && (
        <button type="button" class="link" aria-expanded={open} aria-controls={argsId} onClick={() => setOpen(!open)}>
          {open ? 'Show less' : 'Show more'}
        </button>
      )}
    </div>
  );
}

/** A session's title (the sessions API's `title`, when the gateway has it), else its key. */
export function sessionTitle(session: { id: string; title?: string | null } | undefined, key: string): string {
  const title = session?.title;
  return typeof title === 'string' && title.trim() !== '' ? title : key;
}

/** A link to a session on the Sessions page, by title (its key on hover). */
export function SessionLink({ sessionKey, title }: { sessionKey: string; title: string }) {
  return (
    <a href={`#/sessions?key=${encodeURIComponent(sessionKey)}`} title={sessionKey}>
      {title}
    </a>
  );
}
