/**
 * A modal dialog on the native `<dialog>` (`showModal()`: the page behind is inert, Esc closes it), labelled by
 * its heading. Tab and Shift+Tab wrap inside it, so focus cannot reach the browser's chrome either, and closing
 * gives focus back to what had it before.
 */
import type { ComponentChildren } from 'preact';
import { useEffect, useRef } from 'preact/hooks';

const FOCUSABLE =
  'a[href], button:not([disabled]), input:not([disabled]), select, textarea, [tabindex]:not([tabindex="-1"])';

/** Props of `Modal`. */
export interface ModalProps {
  /** The id of the dialog's heading, which names it. */
  labelledBy: string;
  onClose: () => void;
  class?: string;
  children: ComponentChildren;
}

/** Shown while mounted; the parent unmounts it to close (after `onClose`). */
export function Modal({ labelledBy, onClose, class: className, children }: ModalProps) {
  const dialog = useRef<HTMLDialogElement>(null);
  const onCloseRef = useRef(onClose);
  onCloseRef.current = onClose;
  /**
   * False once unmounted: closing the element on unmount queues a `close` event, which may arrive after the
   * parent opened a new dialog; it must not close that one.
   */
  const mounted = useRef(true);
  const close = () => {
    if (mounted.current) onCloseRef.current();
  };
  useEffect(() => {
    const element = dialog.current;
    if (!element) return;
    const before = document.activeElement instanceof HTMLElement ? document.activeElement : null;
    element.showModal();
    // The first field (or button) gets focus, as showModal() would, but also when the dialog holds a heading first.
    element.querySelector<HTMLElement>('[autofocus], input, button')?.focus();
    return () => {
      mounted.current = false;
      if (element.open) element.close();
      before?.focus();
    };
  }, []);
  const onKeyDown = (event: KeyboardEvent) => {
    if (event.key !== 'Tab' || !dialog.current) return;
    const items = [...dialog.current.querySelectorAll<HTMLElement>(FOCUSABLE)];
    const first = items[0];
    const last = items.at(-1);
    if (!first || !last) return;
    if (event.shiftKey && document.activeElement === first) {
      event.preventDefault();
      last.focus();
    } else if (!event.shiftKey && document.activeElement === last) {
      event.preventDefault();
      first.focus();
    }
  };
  return (
    <dialog
      ref={dialog}
      class={`modal ${className ?? ''}`}
      aria-labelledby={labelledBy}
      onKeyDown={onKeyDown}
      onCancel={(event) => {
        // Esc: the parent unmounts the dialog, which closes it.
        event.preventDefault();
        close();
      }}
      // Chromium may close without a cancelable `cancel` (a second Esc with no click between): follow it.
      onClose={close}
      onClick={(event) => {
        // A click on the backdrop (the dialog element itself, outside its content) closes it.
        if (event.target === dialog.current) close();
      }}
    >
      <div class="modal-body">{children}</div>
    </dialog>
  );
}
