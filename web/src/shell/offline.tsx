/**
 * The offline banner: one line saying the gateway cannot be reached and when the next attempt is, with a Retry
 * button, in place of a notice per failed request. It goes away by itself when the gateway answers again.
 */
import { useEffect, useState } from 'preact/hooks';
import { useNow } from '../ui';
import type { Connectivity, ConnectivityState } from './connectivity';

/** The connectivity state, re-rendering on change. */
export function useConnectivity(state: ConnectivityState): Connectivity {
  const [current, setCurrent] = useState(state.current);
  useEffect(() => {
    setCurrent(state.current);
    return state.subscribe(setCurrent);
  }, [state]);
  return current;
}

/** Props of `OfflineBanner`. */
export interface OfflineBannerProps {
  state: Connectivity;
  /** Tries now (the live socket and one request). */
  onRetry: () => void;
}

/** Shown while the gateway is unreachable; renders nothing otherwise. */
export function OfflineBanner({ state, onRetry }: OfflineBannerProps) {
  const now = useNow(state.offline && state.nextAttemptAt !== null);
  if (!state.offline) return null;
  const seconds = state.nextAttemptAt === null ? null : Math.max(0, Math.ceil((state.nextAttemptAt - now) / 1000));
  return (
    <div class="offline-banner" data-testid="offline-banner">
      {/* Only the sentence is announced: the countdown beside it changes every second. */}
      <p role="alert">
        <strong>Can't reach the gateway at {location.origin} — reconnecting…</strong>
      </p>
      <span class="offline-next">
        {seconds === null
          ? 'Trying again on the next request.'
          : seconds > 0
            ? `Next attempt in ${seconds} s`
            : 'Trying now…'}
      </span>
      <button type="button" class="secondary" onClick={onRetry}>
        Retry
      </button>
    </div>
  );
}
