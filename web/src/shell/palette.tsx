/**
 * The command palette (Ctrl+K or ⌘+K): one field that searches the pages of the route table, the sessions
 * (`GET /api/v1/sessions`, newest activity first) and the shell's actions; arrow keys move, Enter runs, Esc
 * closes. The field is a combobox over a listbox whose active option is named by `aria-activedescendant`, so
 * focus stays in the field while a screen reader hears the option.
 */
import { useEffect, useMemo, useState } from 'preact/hooks';
import type { GatehouseClient } from '../../../client/index.js';
import { routes } from '../routes';
import { Modal } from './modal';

/** An action the shell offers in the palette. */
export interface PaletteAction {
  label: string;
  run: () => void;
}

/** One entry of the palette. */
interface Item {
  id: string;
  group: 'Pages' | 'Actions' | 'Sessions';
  label: string;
  /** Extra text searched and shown muted (a session's key). */
  detail?: string;
  run: () => void;
}

/** The sessions the palette offers at most. */
const SESSION_LIMIT = 50;
/** The entries listed at most, so a long session list stays quick to scan. */
const SHOWN_LIMIT = 30;

/** A session as the palette shows it: its title once the API has one, else its key. */
interface SessionEntry {
  key: string;
  title: string;
}

/** Props of `CommandPalette`. */
export interface CommandPaletteProps {
  api: GatehouseClient;
  actions: readonly PaletteAction[];
  onClose: () => void;
}

/** Goes to a hash route. */
function go(hash: string): void {
  location.hash = hash;
}

/** The palette dialog; mounted while open. */
export function CommandPalette({ api, actions, onClose }: CommandPaletteProps) {
  const [query, setQuery] = useState('');
  const [active, setActive] = useState(0);
  const [sessions, setSessions] = useState<SessionEntry[]>([]);

  useEffect(() => {
    let current = true;
    api.GET('/api/v1/sessions', { params: { query: { limit: SESSION_LIMIT } } }).then(
      ({ data }) => {
        if (!current || !data) return;
        setSessions(
          data.items.map((session) => {
            // `title` is newer than some gateways this dashboard may talk to.
            const title = (session as { title?: string | null }).title;
            return { key: session.id, title: title ?? session.id };
          }),
        );
      },
      // Unreachable gateway: the offline banner says so; pages and actions still work.
      () => undefined,
    );
    return () => {
      current = false;
    };
  }, [api]);

  const items = useMemo<Item[]>(() => {
    const all: Item[] = [
      ...routes.map((route) => ({
        id: `page-${route.name}`,
        group: 'Pages' as const,
        label: route.title,
        run: () => go(`#/${route.name}`),
      })),
      ...actions.map((action, index) => ({
        id: `action-${index}`,
        group: 'Actions' as const,
        label: action.label,
        run: action.run,
      })),
      ...sessions.map((session, index) => ({
        id: `session-${index}`,
        group: 'Sessions' as const,
        label: session.title,
        ...(session.title !== session.key ? { detail: session.key } : {}),
        run: () => go(`#/sessions?key=${encodeURIComponent(session.key)}`),
      })),
    ];
    const words = query.toLowerCase().split(/\s+/).filter(Boolean);
    return all
      .filter((item) => {
        const text = `${item.group} ${item.label} ${item.detail ?? ''}`.toLowerCase();
        return words.every((word) => text.includes(word));
      })
      .slice(0, SHOWN_LIMIT);
  }, [actions, sessions, query]);

  const selected = Math.min(active, Math.max(items.length - 1, 0));
  const run = (item: Item | undefined) => {
    if (!item) return;
    onClose();
    item.run();
  };
  useEffect(() => {
    document.getElementById(`palette-${items[selected]?.id ?? ''}`)?.scrollIntoView({ block: 'nearest' });
  }, [items, selected]);

  const onKeyDown = (event: KeyboardEvent) => {
    if (event.key === 'ArrowDown' || event.key === 'ArrowUp') {
      event.preventDefault();
      const step = event.key === 'ArrowDown' ? 1 : -1;
      if (items.length > 0) setActive((selected + step + items.length) % items.length);
    } else if (event.key === 'Enter') {
      event.preventDefault();
      run(items[selected]);
    }
  };

  return (
    <Modal labelledBy="palette-title" onClose={onClose} class="palette">
      <h2 id="palette-title" class="visually-hidden">
        Command palette
      </h2>
      <label for="palette-input" class="visually-hidden">
        Search pages, sessions and actions
      </label>
      <input
        id="palette-input"
        type="text"
        role="combobox"
        autoComplete="off"
        spellcheck={false}
        placeholder="Search pages, sessions and actions…"
        aria-expanded="true"
        aria-controls="palette-list"
        aria-autocomplete="list"
        aria-activedescendant={items[selected] ? `palette-${items[selected].id}` : undefined}
        value={query}
        onInput={(event) => {
          setQuery(event.currentTarget.value);
          setActive(0);
        }}
        onKeyDown={onKeyDown}
      />
      <ul id="palette-list" role="listbox" aria-label="Results" class="palette-list">
        {items.map((item, index) => (
          <li
            key={item.id}
            id={`palette-${item.id}`}
            role="option"
            aria-selected={index === selected}
            class={index === selected ? 'active' : undefined}
            onMouseMove={() => index !== selected && setActive(index)}
            onClick={() => run(item)}
          >
            <span class="palette-group">{item.group}</span>
            <span class="palette-label">{item.label}</span>
            {item.detail && <span class="palette-detail muted">{item.detail}</span>}
          </li>
        ))}
      </ul>
      {items.length === 0 && <p class="muted palette-empty">Nothing matches “{query}”.</p>}
      <p class="palette-hint muted">↑ ↓ to move · Enter to open · Esc to close</p>
    </Modal>
  );
}
