/**
 * Light and dark: the system's setting until the operator picks one with the header's toggle, which is then
 * remembered in `localStorage` (`gatehouse.theme`). The theme in force is always on `<html data-theme>`, which
 * styles.css reads; before this script runs, styles.css follows the system setting on its own.
 */
import { useCallback, useEffect, useState } from 'preact/hooks';

/** A theme of the dashboard. */
export type Theme = 'light' | 'dark';

const THEME_KEY = 'gatehouse.theme';
const DARK_QUERY = '(prefers-color-scheme: dark)';

/** The theme picked earlier in this browser, or null (follow the system). */
export function chosenTheme(): Theme | null {
  try {
    const value = localStorage.getItem(THEME_KEY);
    return value === 'light' || value === 'dark' ? value : null;
  } catch {
    // Storage refused (a locked-down browser): follow the system.
    return null;
  }
}

/** The system's setting. */
function systemTheme(): Theme {
  return matchMedia(DARK_QUERY).matches ? 'dark' : 'light';
}

/** Puts the theme in force on `<html>` and answers it. */
export function applyTheme(): Theme {
  const theme = chosenTheme() ?? systemTheme();
  document.documentElement.dataset.theme = theme;
  return theme;
}

/** The theme in force and its toggle (which remembers the choice); follows the system until one is made. */
export function useTheme(): { theme: Theme; toggle: () => void } {
  const [theme, setTheme] = useState<Theme>(applyTheme);
  useEffect(() => {
    const media = matchMedia(DARK_QUERY);
    const onChange = () => setTheme(applyTheme());
    media.addEventListener('change', onChange);
    return () => media.removeEventListener('change', onChange);
  }, []);
  const toggle = useCallback(() => {
    const next: Theme = (chosenTheme() ?? systemTheme()) === 'dark' ? 'light' : 'dark';
    try {
      localStorage.setItem(THEME_KEY, next);
    } catch {
      // Not remembered; it still applies to this tab.
      document.documentElement.dataset.theme = next;
      setTheme(next);
      return;
    }
    setTheme(applyTheme());
  }, []);
  return { theme, toggle };
}
