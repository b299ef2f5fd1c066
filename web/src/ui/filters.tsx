/**
 * The filters of a list page: the filters applied (what the list shows; its load follows them) and the text
 * typed into each filter's field, applied on submit. A filter set by a click (a tag, a select) is applied at
 * once and shown in its field.
 */
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';

/** The state of a page's filters (see {@link useFilters}); every filter is text. */
export interface Filters<F extends Record<string, string>> {
  /** The filters the list shows: a new object on every apply, so a load that depends on it runs again. */
  applied: F;
  /** The `value` and `onInput` of a filter's text field. */
  field: (name: keyof F) => { value: string; onInput: (event: { currentTarget: { value: string } }) => void };
  /** Applies `next` over the applied filters and shows it in their fields; other fields keep their text. */
  apply: (next: Partial<F>) => void;
  /** Applies the text of every field, trimmed. */
  submit: () => void;
  /** Empties every filter and its field. */
  clear: () => void;
  /** True when a filter is applied or typed: there is something to clear. */
  active: boolean;
}

/** Filters starting at `initial`; `onApply` runs on every apply (e.g. to go back to the first page). */
export function useFilters<F extends Record<string, string>>(initial: F, onApply?: () => void): Filters<F> {
  const [applied, setApplied] = useState<F>(initial);
  const [text, setText] = useState<F>(initial);
  const apply = (next: Partial<F>) => {
    setApplied((current) => ({ ...current, ...next }));
    setText((current) => ({ ...current, ...next }));
    onApply?.();
  };
  const every = (value: (name: keyof F) => string) =>
    Object.fromEntries(Object.keys(text).map((name) => [name, value(name)])) as Partial<F>;
  return {
    applied,
    field: (name) => ({
      value: text[name] ?? '',
      onInput: (event) => {
        const value = event.currentTarget.value;
        setText((current) => ({ ...current, [name]: value }));
      },
    }),
    apply,
    submit: () => apply(every((name) => (text[name] ?? '').trim())),
    clear: () => apply(every(() => '')),
    active: Object.values(applied).some(Boolean) || Object.values(text).some(Boolean),
  };
}

/**
 * A list's search form: the filter fields (`children`), then Search (applies what is typed, then runs
 * `onSubmit`) and Clear.
 */
export function SearchForm<F extends Record<string, string>>({
  label,
  filters,
  onSubmit,
  children,
}: {
  /** The form's accessible name (`Search memory`). */
  label: string;
  filters: Filters<F>;
  onSubmit?: () => void;
  children: ComponentChildren;
}) {
  return (
    <form
      class="toolbar"
      role="search"
      aria-label={label}
      onSubmit={(event) => {
        event.preventDefault();
        filters.submit();
        onSubmit?.();
      }}
    >
      {children}
      <div class="actions">
        <button type="submit">Search</button>
        <button type="button" class="secondary" disabled={!filters.active} onClick={filters.clear}>
          Clear
        </button>
      </div>
    </form>
  );
}
