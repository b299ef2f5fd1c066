/**
 * The dashboard's shell (ADR 0020): sign-in with a pasted token or the start-up banner's `#token=` link (moved
 * into `sessionStorage` and removed from the URL before anything else runs, DECISIONS §14), the role of the
 * token, the layout (navigation of every route, the page, the notices), the one live WebSocket, and sign-out.
 *
 * The header holds the live state, the role, the command palette's button (Ctrl+K / ⌘+K), the light/dark toggle
 * and sign-out; on a phone the navigation folds behind a menu button. When the gateway cannot be reached, one
 * offline banner replaces the notices of the failed requests (web/src/shell/).
 *
 * Role detection asks the API once: `GET /api/v1/logs?limit=1` is admin-only and reads the in-memory log
 * buffer, so it is the cheapest such call. 200 means `admin`, 403 means `api`, 401 means the token is refused.
 */
import { render } from 'preact';
import { useCallback, useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { createGatehouseClient, type GatehouseClient } from '../../client/index.js';
import { apiError, describeError, type ErrorText } from './errors';
import { LiveSocket } from './live';
import type { PageProps } from './page';
import { PENDING_CAP, usePendingApprovals } from './pending';
import { routeOf, routes, type PageModule } from './routes';
import { ConnectivityState, isNetworkError } from './shell/connectivity';
import { OfflineBanner, useConnectivity } from './shell/offline';
import { CommandPalette, type PaletteAction } from './shell/palette';
import { ShortcutsHelp, useShortcuts } from './shell/shortcuts';
import { applyTheme, useTheme } from './shell/theme';
import './styles.css';

const TOKEN_KEY = 'gatehouse.token';

/** Moves `#token=…` into sessionStorage and removes it from the address bar and the history entry. */
function takeFragmentToken(): void {
  if (!location.hash.includes('token=')) return;
  const params = new URLSearchParams(location.hash.slice(1));
  const token = params.get('token');
  params.delete('token');
  const rest = params.toString();
  history.replaceState(history.state, '', location.pathname + location.search + (rest ? `#${rest}` : ''));
  if (token) sessionStorage.setItem(TOKEN_KEY, token);
}

takeFragmentToken();
applyTheme();

type Role = PageProps['role'];

/** Asks the API what `token` may do; throws the envelope's error for a refused token or any other failure. */
async function detectRole(api: GatehouseClient): Promise<Role> {
  const { response, error } = await api.GET('/api/v1/logs', { params: { query: { limit: 1 } } });
  if (response.ok) return 'admin';
  if (response.status === 403) return 'api';
  throw apiError(error, response);
}

interface Notice extends ErrorText {
  id: number;
}

/** Follows `location.hash`. */
function useHash(): string {
  const [hash, setHash] = useState(location.hash);
  useEffect(() => {
    const onChange = () => setHash(location.hash);
    addEventListener('hashchange', onChange);
    // A change between the first render and this effect fired before anyone listened.
    onChange();
    return () => removeEventListener('hashchange', onChange);
  }, []);
  return hash;
}

/** The sign-in screen: one labelled field and a button; a refused token is said in an alert. */
function SignIn({ onToken, error, busy }: { onToken: (token: string) => void; error: unknown; busy: boolean }) {
  const [value, setValue] = useState('');
  const input = useRef<HTMLInputElement>(null);
  useEffect(() => input.current?.focus(), [error]);
  const text = error === undefined ? undefined : describeError(error);
  return (
    <main class="signin" id="main">
      <form
        class="card signin-card"
        onSubmit={(event) => {
          event.preventDefault();
          if (value.trim()) onToken(value.trim());
        }}
      >
        <h1>Gatehouse</h1>
        <p>Sign in with an API or admin token. It is kept in this tab only and sent as a header.</p>
        <label for="token">API token</label>
        <input
          id="token"
          ref={input}
          type="password"
          autoComplete="off"
          spellcheck={false}
          value={value}
          onInput={(event) => setValue(event.currentTarget.value)}
          aria-invalid={text ? true : undefined}
          aria-describedby={text ? 'signin-error' : undefined}
        />
        <button type="submit" disabled={busy || !value.trim()}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
        {text && (
          <p id="signin-error" class="error-box" role="alert">
            <strong>{text.code === 'UNAUTHORIZED' ? `Token refused: ${text.message}` : text.message}</strong>
            {text.requestId && (
              <span class="request-id">
                {' '}
                Request id: <code>{text.requestId}</code>
              </span>
            )}
          </p>
        )}
        {text?.code === 'UNAUTHORIZED' && (
          <div class="signin-help" id="signin-help">
            <p>Where the token is:</p>
            <ul>
              <li>
                The admin token generated on the first start is in{' '}
                <code>&lt;data_dir&gt;/gateway_auth/admin_token</code>; <code>gatehouse token show</code> prints it.
              </li>
              <li>
                The first start's log prints a link that signs in at once; every start prints the dashboard's address
                and where the token is.
              </li>
              <li>
                Tokens set in the configuration are under <code>gateway.auth</code> (<code>admin_tokens</code>,{' '}
                <code>api_tokens</code>).
              </li>
            </ul>
          </div>
        )}
      </form>
    </main>
  );
}

/** Loads and shows the page of the current route; a failed chunk load is reported on the page. */
function PageHost({ props, name }: { props: PageProps; name: string }) {
  const [loaded, setLoaded] = useState<{ name: string; module: PageModule } | { name: string; error: unknown }>();
  useEffect(() => {
    let live = true;
    const route = routes.find((r) => r.name === name);
    if (!route) return;
    route.load().then(
      (module) => live && setLoaded({ name, module }),
      (error: unknown) => live && setLoaded({ name, error }),
    );
    return () => {
      live = false;
    };
  }, [name]);
  if (!loaded || loaded.name !== name) return <p class="loading">Loading…</p>;
  if ('error' in loaded) {
    return (
      <div class="error-box" role="alert">
        <p>This page could not be loaded: {describeError(loaded.error).message}</p>
        <p>
          The gateway may have been updated since this tab opened.{' '}
          <button type="button" class="secondary" onClick={() => location.reload()}>
            Reload the dashboard
          </button>
        </p>
      </div>
    );
  }
  const Page = loaded.module.default;
  return <Page {...props} />;
}

/** The label of the Approvals entry's badge: `3 pending`, `200+ pending`; nothing while none or unknown. */
function PendingBadge({ count }: { count: number | null }) {
  if (!count) return null;
  const text = count >= PENDING_CAP ? `${PENDING_CAP}+` : String(count);
  return (
    <span class="nav-badge" data-testid="pending-badge">
      {text}
      <span class="visually-hidden"> pending</span>
    </span>
  );
}

/** The signed-in layout: header, navigation, the page, the offline banner and the notices. */
function Layout({ token, role, onSignOut }: { token: string; role: Role; onSignOut: () => void }) {
  const hash = useHash();
  const { route } = routeOf(hash);
  const [connected, setConnected] = useState(false);
  const [notices, setNotices] = useState<Notice[]>([]);
  /** The open dialog; each opening has its own `id`, so a dialog opened again before a render is a new one. */
  const [dialog, setDialog] = useState<{ kind: 'palette' | 'help'; id: number } | null>(null);
  const dialogIds = useRef(0);
  // From the state as it is, not as last rendered: a dialog asked for right after one closed (before the shell
  // renders again) opens, and one that is open is never replaced.
  const openDialog = useCallback(
    (kind: 'palette' | 'help') => setDialog((open) => open ?? { kind, id: ++dialogIds.current }),
    [],
  );
  const [menuOpen, setMenuOpen] = useState(false);
  const { theme, toggle: toggleTheme } = useTheme();
  const nextId = useRef(1);
  const connectivity = useMemo(() => new ConnectivityState(), []);
  const reachability = useConnectivity(connectivity);
  const api = useMemo(
    () => createGatehouseClient(location.origin, token, { fetch: connectivity.fetch }),
    [token, connectivity],
  );
  const live = useMemo(
    () =>
      new LiveSocket({
        token,
        onStatus: setConnected,
        onRefused: onSignOut,
        onRetry: (at) => connectivity.socketRetry(at),
      }),
    [token, onSignOut, connectivity],
  );
  const pending = usePendingApprovals({ api, role, live });
  useEffect(() => {
    live.start();
    return () => live.close();
  }, [live]);
  useEffect(() => {
    document.title = `${route.title} · Gatehouse`;
  }, [route]);
  // A page chosen from the folded menu closes it.
  useEffect(() => setMenuOpen(false), [hash]);

  const notify = useCallback(
    (error: unknown) => {
      // No answer at all: the offline banner says so once, instead of a "Failed to fetch" per request.
      if (isNetworkError(error)) {
        connectivity.failed();
        return;
      }
      const id = nextId.current++;
      setNotices((list) => [...list.slice(-4), { id, ...describeError(error) }]);
    },
    [connectivity],
  );
  const dismiss = (id: number) => setNotices((list) => list.filter((n) => n.id !== id));
  const props = useMemo<PageProps>(() => ({ api, token, role, live, notify }), [api, token, role, live, notify]);
  const retry = useCallback(() => {
    live.retryNow();
    // Any answer clears the banner; a network failure is already counted by the client's fetch.
    api.GET('/api/v1/health').catch(() => undefined);
  }, [api, live]);

  // Closes that opening only: a late close of an earlier dialog never closes the one open now.
  const closeDialog = useCallback((id: number) => setDialog((open) => (open?.id === id ? null : open)), []);
  useShortcuts({
    openPalette: () => openDialog('palette'),
    openHelp: () => openDialog('help'),
    dialogOpen: dialog !== null,
  });
  const actions = useMemo<PaletteAction[]>(
    () => [
      { label: 'New chat', run: () => void (location.hash = '#/chat?new=1') },
      { label: 'Go to approvals', run: () => void (location.hash = '#/approvals') },
      { label: 'Toggle theme', run: toggleTheme },
      { label: 'Keyboard shortcuts', run: () => setTimeout(() => openDialog('help')) },
      { label: 'Sign out', run: onSignOut },
    ],
    [toggleTheme, onSignOut],
  );
  const nextTheme = theme === 'dark' ? 'light' : 'dark';

  return (
    <div class="shell">
      <a class="skip" href="#main" onClick={(e) => (e.preventDefault(), document.getElementById('main')?.focus())}>
        Skip to content
      </a>
      <header class="topbar">
        <span class="brand">Gatehouse</span>
        <span class={`live-dot ${connected ? 'on' : 'off'}`} role="status">
          {connected ? 'Live' : 'Offline'}
        </span>
        <span class="role" title="The role of the signed-in token">
          Role: <strong>{role}</strong>
        </span>
        <button
          type="button"
          class="secondary"
          aria-keyshortcuts="Control+K Meta+K"
          title="Command palette (Ctrl+K or ⌘+K)"
          onClick={() => openDialog('palette')}
        >
          Search all
        </button>
        <button
          type="button"
          class="secondary theme-toggle"
          aria-label={`Switch to ${nextTheme} theme`}
          title={`Switch to the ${nextTheme} theme`}
          onClick={toggleTheme}
        >
          {theme === 'dark' ? 'Light' : 'Dark'}
        </button>
        <button type="button" class="secondary" onClick={onSignOut}>
          Sign out
        </button>
      </header>
      <nav class="sidenav" aria-label="Pages">
        <button
          type="button"
          class="secondary menu-button"
          aria-expanded={menuOpen}
          aria-controls="nav-pages"
          onClick={() => setMenuOpen((open) => !open)}
        >
          {menuOpen ? 'Close menu' : 'Menu'}
          <span class="muted"> · {route.title}</span>
        </button>
        <ul id="nav-pages" class={menuOpen ? 'open' : undefined}>
          {routes.map((r) => (
            <li key={r.name}>
              <a href={`#/${r.name}`} aria-current={r === route ? 'page' : undefined}>
                {r.title}
                {r.name === 'approvals' && <PendingBadge count={pending} />}
              </a>
            </li>
          ))}
        </ul>
      </nav>
      <main id="main" tabIndex={-1} class="content">
        <OfflineBanner state={reachability} onRetry={retry} />
        <PageHost props={props} name={route.name} />
      </main>
      <section class="notices" aria-label="Notices" aria-live="assertive">
        {notices.map((n) => (
          <div key={n.id} class="notice" role="alert">
            <div>
              <strong>{n.message}</strong>
              {n.requestId && (
                <div class="request-id">
                  Request id: <code>{n.requestId}</code>
                </div>
              )}
            </div>
            <button type="button" class="icon" aria-label="Dismiss notice" onClick={() => dismiss(n.id)}>
              ×
            </button>
          </div>
        ))}
      </section>
      {dialog?.kind === 'palette' && (
        <CommandPalette key={dialog.id} api={api} actions={actions} onClose={() => closeDialog(dialog.id)} />
      )}
      {dialog?.kind === 'help' && <ShortcutsHelp key={dialog.id} onClose={() => closeDialog(dialog.id)} />}
    </div>
  );
}

/** The app: sign-in until a token is accepted, then the layout. */
function App() {
  const [token, setToken] = useState(() => sessionStorage.getItem(TOKEN_KEY));
  const [role, setRole] = useState<Role>();
  const [error, setError] = useState<unknown>(undefined);
  const [busy, setBusy] = useState(false);

  const signOut = useCallback(() => {
    sessionStorage.removeItem(TOKEN_KEY);
    setToken(null);
    setRole(undefined);
  }, []);

  useEffect(() => {
    if (!token) return;
    let current = true;
    setBusy(true);
    detectRole(createGatehouseClient(location.origin, token)).then(
      (detected) => {
        if (!current) return;
        sessionStorage.setItem(TOKEN_KEY, token);
        setRole(detected);
        setError(undefined);
        setBusy(false);
      },
      (failure: unknown) => {
        if (!current) return;
        sessionStorage.removeItem(TOKEN_KEY);
        setToken(null);
        setError(failure);
        setBusy(false);
      },
    );
    return () => {
      current = false;
    };
  }, [token]);

  if (token && role) return <Layout token={token} role={role} onSignOut={signOut} />;
  if (token) return <p class="loading">Signing in…</p>;
  return <SignIn onToken={setToken} error={error} busy={busy} />;
}

const mount = document.getElementById('app');
if (mount) render(<App />, mount);
