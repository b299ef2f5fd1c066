/**
 * The keyboard of the shell: Ctrl+K or ⌘+K opens the command palette (also from a text field), `?` opens the
 * list of shortcuts and `g` then a letter goes to a page (both only outside text fields, where they are
 * typing), Esc closes a dialog (the native `<dialog>` does that).
 */
import { useEffect, useRef } from 'preact/hooks';
import { Modal } from './modal';

/** `g` then one of these letters opens the page. */
export const GO_KEYS: Readonly<Record<string, { route: string; title: string }>> = {
  o: { route: 'overview', title: 'Overview' },
  c: { route: 'chat', title: 'Chat' },
  s: { route: 'sessions', title: 'Sessions' },
  a: { route: 'approvals', title: 'Approvals' },
  l: { route: 'logs', title: 'Logs' },
};

/** How long after `g` the letter counts. */
const GO_WINDOW_MS = 1500;

/** True when keys typed at `target` are text (an input, a text area, a select, an editable element). */
function isTyping(target: EventTarget | null): boolean {
  if (!(target instanceof HTMLElement)) return false;
  if (target.isContentEditable) return true;
  if (target instanceof HTMLTextAreaElement || target instanceof HTMLSelectElement) return true;
  if (!(target instanceof HTMLInputElement)) return false;
  return !['button', 'checkbox', 'radio', 'submit', 'reset', 'range', 'color', 'file'].includes(target.type);
}

/** What the shell does on its keys. */
export interface ShortcutHandlers {
  /** Opens the palette unless a dialog is open (read from the current state: the last render may be stale). */
  openPalette: () => void;
  openHelp: () => void;
  /** True while a dialog is open: then only Ctrl/⌘+K is listened to (it does nothing more). */
  dialogOpen: boolean;
}

/** Listens to the shell's keys on the document while mounted. */
export function useShortcuts(handlers: ShortcutHandlers): void {
  const ref = useRef(handlers);
  ref.current = handlers;
  useEffect(() => {
    let goSince = 0;
    const onKey = (event: KeyboardEvent) => {
      const { openPalette, openHelp, dialogOpen } = ref.current;
      if ((event.ctrlKey || event.metaKey) && !event.altKey && event.key.toLowerCase() === 'k') {
        event.preventDefault();
        openPalette();
        return;
      }
      if (dialogOpen || event.ctrlKey || event.metaKey || event.altKey || isTyping(event.target)) return;
      if (event.key === '?') {
        event.preventDefault();
        openHelp();
        return;
      }
      const target = GO_KEYS[event.key];
      if (target && Date.now() - goSince < GO_WINDOW_MS) {
        goSince = 0;
        location.hash = `#/${target.route}`;
        return;
      }
      goSince = event.key === 'g' ? Date.now() : 0;
    };
    document.addEventListener('keydown', onKey);
    return () => document.removeEventListener('keydown', onKey);
  }, []);
}

/** The list of shortcuts, as a dialog. */
export function ShortcutsHelp({ onClose }: { onClose: () => void }) {
  const rows: Array<[string, string]> = [
    ['Ctrl+K or ⌘+K', 'Open the command palette: pages, sessions and actions'],
    ['?', 'Show this list'],
    ...Object.entries(GO_KEYS).map(([key, { title }]): [string, string] => [`g then ${key}`, `Go to ${title}`]),
    ['↑ ↓ and Enter', 'Move in the command palette and open the entry'],
    ['Esc', 'Close a dialog'],
  ];
  return (
    <Modal labelledBy="shortcuts-title" onClose={onClose} class="shortcuts">
      <div class="actions spread">
        <h2 id="shortcuts-title">Keyboard shortcuts</h2>
        <button type="button" class="secondary" onClick={onClose}>
          Close
        </button>
      </div>
      <table>
        <caption class="visually-hidden">Keys and what they do</caption>
        <thead>
          <tr>
            <th scope="col">Keys</th>
            <th scope="col">Does</th>
          </tr>
        </thead>
        <tbody>
          {rows.map(([keys, does]) => (
            <tr key={keys}>
              <td>
                <kbd>{keys}</kbd>
              </td>
              <td>{does}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <p class="muted">The letter keys work outside text fields; theme: the header's Dark/Light button.</p>
    </Modal>
  );
}
