/**
 * The plumbing every form that writes through the API shares: whether a submit is running, its error (the
 * problems of single fields shown at those fields, anything else once above the buttons) and the row of
 * buttons at its end.
 */
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import type { GatehouseClient } from '../../../client/index.js';
import { ErrorBox } from '../ui';
import { fieldErrorsOf, type FieldErrors } from './fields';

/** The props of a create-or-edit form (the object it edits, when editing, is the form's own prop). */
export interface EditorProps<T> {
  api: GatehouseClient;
  /** Called with what the server saved. */
  onSaved: (saved: T) => void;
  /** Shows a button that closes the form. */
  onCancel?: () => void;
}

/** The state of a form's submit (see {@link useSubmit}). */
export interface Submit {
  /** True while a submit runs. */
  busy: boolean;
  /** What the last submit threw, until the next one starts. */
  error: unknown;
  setError: (error: unknown) => void;
  /** The error's messages by field name ({@link fieldErrorsOf}). */
  fields: FieldErrors;
  /** True when there is an error and no field claims it: {@link FormFooter} shows it above the buttons. */
  general: boolean;
  /** The form's `onSubmit`: stays on the page and runs the submit. */
  onSubmit: (event: Event) => void;
}

/** Runs `run` on submit, keeping whether it runs and what it threw. */
export function useSubmit(run: () => Promise<void>): Submit {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(undefined);
  const fields = fieldErrorsOf(error);
  const submit = async () => {
    setBusy(true);
    setError(undefined);
    try {
      await run();
    } catch (failure) {
      setError(failure);
    } finally {
      setBusy(false);
    }
  };
  return {
    busy,
    error,
    setError,
    fields,
    general: error !== undefined && Object.keys(fields).length === 0,
    onSubmit: (event) => {
      event.preventDefault();
      void submit();
    },
  };
}

/**
 * The end of a form: the error no field claims, then the submit button, the close button when `onCancel` is
 * given, and any further buttons (`children`). `wide` spans every column of a grid form.
 */
export function FormFooter({
  state,
  submit,
  cancel = 'Close',
  onCancel,
  wide,
  children,
}: {
  state: Submit;
  /** The submit button's text. */
  submit: string;
  /** The close button's text. */
  cancel?: string;
  onCancel?: () => void;
  wide?: boolean;
  children?: ComponentChildren;
}) {
  const error = state.general && <ErrorBox error={state.error} />;
  return (
    <>
      {error && (wide ? <div class="wide">{error}</div> : error)}
      <div class={wide ? 'actions wide' : 'actions'}>
        <button type="submit" disabled={state.busy}>
          {submit}
        </button>
        {onCancel && (
          <button type="button" class="secondary" onClick={onCancel}>
            {cancel}
          </button>
        )}
        {children}
      </div>
    </>
  );
}
