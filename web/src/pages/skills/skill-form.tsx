/**
 * The form that adds a skill (POST /skills, admin): name, description, instructions (the SKILL.md body) and an
 * optional category. The rules shown beside each field are the server's (src/skills/skills.schema.ts); its
 * errors appear at their fields. The skill it creates is active at once.
 */
import { useState } from 'preact/hooks';
import type { Skill } from '../../api';
import { must } from '../../errors';
import { FieldError, fieldProps } from '../../ui/fields';
import { FormFooter, useSubmit, type EditorProps } from '../../ui/form';

/** Create form of a skill. */
export function SkillForm({ api, onSaved, onCancel }: EditorProps<Skill>) {
  const [name, setName] = useState('');
  const [description, setDescription] = useState('');
  const [instructions, setInstructions] = useState('');
  const [category, setCategory] = useState('');
  const form = useSubmit(async () => {
    const saved = await must(
      api.POST('/api/v1/skills', {
        body: { name, description, instructions, ...(category.trim() ? { category } : {}) },
      }),
    );
    setName('');
    setDescription('');
    setInstructions('');
    setCategory('');
    onSaved(saved);
  });
  const fields = form.fields;
  return (
    <form class="form-grid skill-form" aria-label="New skill" noValidate onSubmit={form.onSubmit}>
      <div class="field">
        <label for="skill-new-name">Name</label>
        <input
          {...fieldProps('skill-new-name', fields.name, 'skill-new-name-hint')}
          type="text"
          class="code"
          autoComplete="off"
          spellcheck={false}
          maxLength={64}
          value={name}
          onInput={(event) => setName(event.currentTarget.value)}
        />
        <span id="skill-new-name-hint" class="hint">
          Lowercase letters, digits and single hyphens, e.g. <code>release-notes</code>.
        </span>
        <FieldError id="skill-new-name" error={fields.name} />
      </div>
      <div class="field">
        <label for="skill-new-category">
          Category <span class="hint">(optional)</span>
        </label>
        <input
          {...fieldProps('skill-new-category', fields.category)}
          type="text"
          maxLength={64}
          value={category}
          onInput={(event) => setCategory(event.currentTarget.value)}
        />
        <FieldError id="skill-new-category" error={fields.category} />
      </div>
      <div class="field wide">
        <label for="skill-new-description">Description</label>
        <input
          {...fieldProps('skill-new-description', fields.description, 'skill-new-description-hint')}
          type="text"
          maxLength={1024}
          value={description}
          onInput={(event) => setDescription(event.currentTarget.value)}
        />
        <span id="skill-new-description-hint" class="hint">
          What it does and when the agent should use it.
        </span>
        <FieldError id="skill-new-description" error={fields.description} />
      </div>
      <div class="field wide">
        <label for="skill-new-instructions">
          Instructions <span class="hint">(Markdown: the body of its SKILL.md)</span>
        </label>
        <textarea
          {...fieldProps('skill-new-instructions', fields.instructions)}
          rows={8}
          class="code"
          value={instructions}
          onInput={(event) => setInstructions(event.currentTarget.value)}
        />
        <FieldError id="skill-new-instructions" error={fields.instructions} />
      </div>
      <FormFooter state={form} submit="Add skill" onCancel={onCancel} wide />
    </form>
  );
}
