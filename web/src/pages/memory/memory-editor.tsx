/**
 * The form of one memory entry: content, tags and (on create) an optional unique key. Creates with POST
 * /memory, or changes an existing entry with PUT /memory/{id}; the server's validation errors appear at
 * their fields, any other error above the buttons.
 */
import { useState } from 'preact/hooks';
import type { components } from '../../../../client/index.js';
import { must } from '../../errors';
import { FieldError, fieldProps, splitList } from '../../ui/fields';
import { FormFooter, useSubmit, type EditorProps } from '../../ui/form';

type MemoryEntry = components['schemas']['MemoryEntry'];

export interface MemoryEditorProps extends EditorProps<MemoryEntry> {
  /** The entry to change; absent to create one. */
  entry?: MemoryEntry;
}

/** Create or edit form of a memory entry. */
export function MemoryEditor({ api, entry, onSaved, onCancel }: MemoryEditorProps) {
  const prefix = entry ? `memory-edit-${entry.id}` : 'memory-new';
  const [content, setContent] = useState(entry?.content ?? '');
  const [tags, setTags] = useState(entry?.tags.join(', ') ?? '');
  const [key, setKey] = useState('');

  const form = useSubmit(async () => {
    const tagList = splitList(tags);
    const saved = entry
      ? await must(
          api.PUT('/api/v1/memory/{id}', { params: { path: { id: entry.id } }, body: { content, tags: tagList } }),
        )
      : await must(
          api.POST('/api/v1/memory', {
            body: { content, tags: tagList, ...(key.trim() ? { key: key.trim() } : {}) },
          }),
        );
    if (!entry) {
      setContent('');
      setTags('');
      setKey('');
    }
    onSaved(saved);
  });
  const fields = form.fields;

  return (
    <form
      class="memory-editor"
      aria-label={entry ? 'Edit memory entry' : 'New memory entry'}
      noValidate
      onSubmit={form.onSubmit}
    >
      <div class="field">
        <label for={`${prefix}-content`}>Content</label>
        <textarea
          {...fieldProps(`${prefix}-content`, fields.content)}
          value={content}
          rows={3}
          onInput={(event) => setContent(event.currentTarget.value)}
        />
        <FieldError id={`${prefix}-content`} error={fields.content} />
      </div>
      <div class="field">
        <label for={`${prefix}-tags`}>
          Tags <span class="hint">(comma-separated)</span>
        </label>
        <input
          {...fieldProps(`${prefix}-tags`, fields.tags)}
          type="text"
          autoComplete="off"
          value={tags}
          onInput={(event) => setTags(event.currentTarget.value)}
        />
        <FieldError id={`${prefix}-tags`} error={fields.tags} />
      </div>
      {!entry && (
        <div class="field">
          <label for={`${prefix}-key`}>
            Key <span class="hint">(optional, unique)</span>
          </label>
          <input
            {...fieldProps(`${prefix}-key`, fields.key)}
            type="text"
            autoComplete="off"
            value={key}
            onInput={(event) => setKey(event.currentTarget.value)}
          />
          <FieldError id={`${prefix}-key`} error={fields.key} />
        </div>
      )}
      <FormFooter state={form} submit={entry ? 'Save' : 'Add entry'} cancel="Cancel" onCancel={onCancel} />
    </form>
  );
}
