/**
 * Form pieces of the data pages: validation errors shown at their field (the envelope's `details` carry
 * `[{path, message}]`, paths such as `body.title` or `body.labels.0`, and problems found before sending), a
 * delete button that asks once more in place, and a poll for resources that have no live topic.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError } from '../errors';
import './fields.css';

/** Field name → message, from a validation error's details (`body.labels.0` → `labels`); empty otherwise. */
export type FieldErrors = Readonly<Record<string, string>>;

/** A problem a form finds before sending (a field that is not valid JSON, a file too large), shown at its field. */
export class LocalFieldError extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
  }
}

/**
 * The field errors of a thrown value: a {@link LocalFieldError}, or an `ApiError` whose details list
 * `{path, message}` issues.
 */
export function fieldErrorsOf(error: unknown): FieldErrors {
  if (error instanceof LocalFieldError) return { [error.field]: error.message };
  if (!(error instanceof ApiError) || !Array.isArray(error.details)) return {};
  const out: Record<string, string> = {};
  for (const issue of error.details as unknown[]) {
    if (!issue || typeof issue !== 'object') continue;
    const { path, message } = issue as { path?: unknown; message?: unknown };
    if (typeof path !== 'string' || typeof message !== 'string') continue;
    const field = path.replace(/^(?:body|query|params)\.?/, '').split('.')[0] ?? '';
    if (field && out[field] === undefined) out[field] = message;
  }
  return out;
}

/**
 * The accessibility attributes of a control with a possible error: `id`, `aria-invalid` and
 * `aria-describedby` pointing at its {@link FieldError} (and at a hint, when given).
 */
export function fieldProps(
  id: string,
  error: string | undefined,
  hintId?: string,
): { id: string; 'aria-invalid'?: true; 'aria-describedby'?: string } {
  const described = [hintId, error ? `${id}-error` : undefined].filter(Boolean).join(' ');
  return {
    id,
    ...(error ? { 'aria-invalid': true as const } : {}),
    ...(described ? { 'aria-describedby': described } : {}),
  };
}

/** The error text of the control `id` (its id is `<id>-error`), or nothing. */
export function FieldError({ id, error }: { id: string; error: string | undefined }) {
  if (!error) return null;
  return (
    <span id={`${id}-error`} class="field-error">
      {error}
    </span>
  );
}

/**
 * A destructive action that asks once more in place ("Delete" → "Confirm delete" / "Keep"), so a stray click
 * or key press never deletes. `label` names the object for screen readers (`Delete memory entry …`).
 */
export function ConfirmButton({
  children,
  confirmText,
  label,
  disabled,
  onConfirm,
}: {
  children: string;
  confirmText: string;
  label: string;
  disabled?: boolean;
  onConfirm: () => void;
}) {
  // null before any click; then whether the question is showing, so focus follows it both ways.
  const [asking, setAsking] = useState<boolean | null>(null);
  const confirmRef = useRef<HTMLButtonElement>(null);
  const askRef = useRef<HTMLButtonElement>(null);
  useEffect(() => {
    if (asking === true) confirmRef.current?.focus();
    if (asking === false) askRef.current?.focus();
  }, [asking]);
  if (!asking) {
    return (
      <button
        ref={askRef}
        type="button"
        class="danger"
        aria-label={label}
        disabled={disabled}
        onClick={() => setAsking(true)}
      >
        {children}
      </button>
    );
  }
  return (
    <span class="actions" role="group" aria-label={label}>
      <button
        ref={confirmRef}
        type="button"
        class="danger"
        onClick={() => {
          setAsking(null);
          onConfirm();
        }}
      >
        {confirmText}
      </button>
      <button type="button" class="secondary" onClick={() => setAsking(false)}>
        Keep
      </button>
    </span>
  );
}

/**
 * Calls `fn` every `ms` while `enabled` and the tab is visible, and once when the tab becomes visible again:
 * the live view of a resource the WebSocket feed has no topic for.
 */
export function usePoll(fn: () => void, ms: number, enabled: boolean): void {
  const fnRef = useRef(fn);
  fnRef.current = fn;
  useEffect(() => {
    if (!enabled) return;
    const tick = () => {
      if (document.visibilityState === 'visible') fnRef.current();
    };
    const timer = setInterval(tick, ms);
    document.addEventListener('visibilitychange', tick);
    return () => {
      clearInterval(timer);
      document.removeEventListener('visibilitychange', tick);
    };
  }, [ms, enabled]);
}

/** Comma-separated words → distinct, trimmed, non-empty words. */
export function splitList(text: string): string[] {
  return [
    ...new Set(
      text
        .split(',')
        .map((word) => word.trim())
        .filter(Boolean),
    ),
  ];
}

/**
 * The text of a field that takes a JSON object (metadata) → the object, or `undefined` when empty; anything
 * but a JSON object throws a {@link LocalFieldError} for `field`.
 */
export function parseJsonObject(text: string, field: string): Record<string, unknown> | undefined {
  if (!text.trim()) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new LocalFieldError(field, `${field} must be a JSON object (${(error as Error).message})`);
  }
  if (!value || typeof value !== 'object' || Array.isArray(value)) {
    throw new LocalFieldError(field, `${field} must be a JSON object`);
  }
  return value as Record<string, unknown>;
}
