/**
 * A list that follows its live-feed topic: a change reloads it (throttled, so a burst makes one reload). While
 * `hold` is true (a search is shown, whose repetition would have effects, or an edit is open) a change is only
 * remembered: `stale` says so, and the list reloads once the hold ends. A slow resync covers events missed
 * while the socket was reconnecting.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import type { LiveFeed } from '../page';
import { useLive, useThrottled } from '../ui';
import { usePoll } from './fields';

/** How often a list is read again anyway, for changes missed while the feed was down. */
const RESYNC_MS = 60_000;

export function useLiveReload(
  live: LiveFeed,
  topics: readonly string[],
  reload: () => void,
  hold = false,
): { stale: boolean } {
  const [stale, setStale] = useState(false);
  const holdRef = useRef(hold);
  holdRef.current = hold;
  const throttled = useThrottled(reload, 300);
  useLive(live, topics, () => {
    if (holdRef.current) setStale(true);
    else throttled();
  });
  useEffect(() => {
    if (!hold && stale) {
      setStale(false);
      reload();
    }
  }, [hold, stale, reload]);
  usePoll(reload, RESYNC_MS, !hold);
  return { stale: stale && hold };
}
