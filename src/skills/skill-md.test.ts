import { describe, expect, it } from 'vitest';
import { categoryOf, parseSkillMd, renderSkillMd, type SkillMdParse } from './skill-md.js';

const doc = (front: string, body = '# Steps\n\n1. Do the thing.') => `---\n${front}\n---\n\n${body}\n`;

function issues(result: SkillMdParse): Array<{ path: string; message: string }> {
  expect(result.ok).toBe(false);
  return result.ok ? [] : result.issues;
}

describe('parseSkillMd', () => {
  it('reads name, description and the body as instructions', () => {
    const result = parseSkillMd(doc('name: pdf-forms\ndescription: Fill in PDF forms. Use for PDFs.'));
    expect(result).toEqual({
      ok: true,
      skill: {
        name: 'pdf-forms',
        description: 'Fill in PDF forms. Use for PDFs.',
        instructions: '# Steps\n\n1. Do the thing.',
        extras: {},
      },
    });
  });

  it('keeps the optional fields of the format and unknown ones, in order; metadata scalars become strings', () => {
    const result = parseSkillMd(
      doc(
        [
          'name: report',
          'description: Weekly report',
          'license: MIT',
          'compatibility: needs git',
          'metadata:',
          '  author: ops',
          '  version: 1.0',
          'allowed-tools: Bash Read',
          'x-custom: [1, 2]',
        ].join('\n'),
      ),
    );
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.skill.extras).toEqual({
      license: 'MIT',
      compatibility: 'needs git',
      metadata: { author: 'ops', version: '1.0' },
      'allowed-tools': 'Bash Read',
      'x-custom': [1, 2],
    });
    expect(Object.keys(result.skill.extras)).toEqual([
      'license',
      'compatibility',
      'metadata',
      'allowed-tools',
      'x-custom',
    ]);
  });

  it('accepts a byte-order mark, CRLF line ends and trailing spaces on the fences', () => {
    const text = '\uFEFF---  \r\nname: a\r\ndescription: b\r\n--- \r\n\r\nline one\r\nline two\r\n';
    const result = parseSkillMd(text);
    expect(result.ok && result.skill).toMatchObject({
      name: 'a',
      description: 'b',
      instructions: 'line one\nline two',
    });
  });

  it('keeps a "---" inside the body (only the first closing fence ends the front matter)', () => {
    const result = parseSkillMd(doc('name: a\ndescription: b', 'above\n\n---\n\nbelow'));
    expect(result.ok && result.skill.instructions).toBe('above\n\n---\n\nbelow');
  });

  it('requires the opening fence', () => {
    expect(issues(parseSkillMd('name: a\ndescription: b\n\nbody'))).toEqual([
      { path: 'skill_md', message: 'must start with a "---" line opening the YAML front matter' },
    ]);
    expect(issues(parseSkillMd(''))[0]?.path).toBe('skill_md');
  });

  it('requires the closing fence', () => {
    expect(issues(parseSkillMd('---\nname: a\ndescription: b\n'))).toEqual([
      { path: 'skill_md', message: 'the YAML front matter is not closed by a "---" line' },
    ]);
  });

  it('reports invalid YAML and duplicate keys at skill_md.front_matter', () => {
    const bad = issues(parseSkillMd(doc('name: [unclosed\ndescription: b')));
    expect(bad.length).toBeGreaterThan(0);
    expect(bad[0]).toMatchObject({ path: 'skill_md.front_matter', message: expect.stringMatching(/^invalid YAML: /) });
    const dup = issues(parseSkillMd(doc('name: a\nname: b\ndescription: c')));
    expect(dup[0]?.path).toBe('skill_md.front_matter');
  });

  it('refuses a deeply nested front matter before parsing it, in every YAML form', () => {
    const deep = [
      `name: a\ndescription: b\nx: ${'['.repeat(20_000)}${']'.repeat(20_000)}`,
      `name: a\ndescription: b\nx: ${'{a: '.repeat(20_000)}1${'}'.repeat(20_000)}`,
      `name: a\ndescription: b\nx:\n${'- '.repeat(20_000)}1`,
      `name: a\ndescription: b\n${Array.from({ length: 200 }, (_, i) => `${' '.repeat(i)}k:`).join('\n')} 1`,
    ];
    for (const front of deep) {
      expect(issues(parseSkillMd(doc(front)))).toEqual([
        { path: 'skill_md.front_matter', message: 'the front matter nests deeper than 32 levels' },
      ]);
    }
    expect(parseSkillMd(doc('name: a\ndescription: b\nextra:\n  x:\n    y: [1, {z: 2}]')).ok).toBe(true);
  });

  it('requires the front matter to be a mapping', () => {
    for (const front of ['', '- a\n- b', 'just text']) {
      expect(issues(parseSkillMd(doc(front)))).toEqual([
        { path: 'skill_md.front_matter', message: 'the front matter must be a YAML mapping with name and description' },
      ]);
    }
  });

  it('lists every problem at once: missing fields and an empty body', () => {
    expect(issues(parseSkillMd('---\nlicense: MIT\n---\n\n  \n'))).toEqual([
      { path: 'skill_md.name', message: 'name is required' },
      { path: 'skill_md.description', message: 'description is required' },
      { path: 'skill_md.body', message: 'the Markdown body (the instructions) must not be empty' },
    ]);
  });

  it.each([
    ['Upper', 'uppercase'],
    ['-lead', 'leading hyphen'],
    ['trail-', 'trailing hyphen'],
    ['dou--ble', 'double hyphen'],
    ['under_score', 'underscore'],
    ['with space', 'space'],
    ['a'.repeat(65), '65 characters'],
  ])('rejects the name %j (%s)', (name) => {
    const found = issues(parseSkillMd(doc(`name: "${name}"\ndescription: ok`)));
    expect(found.map((i) => i.path)).toEqual(['skill_md.name']);
  });

  it('accepts a 64-character name and digits', () => {
    const name = `a1-${'b'.repeat(61)}`;
    expect(name).toHaveLength(64);
    expect(parseSkillMd(doc(`name: ${name}\ndescription: ok`)).ok).toBe(true);
  });

  it('rejects a name that is not a string, and an over-long or empty description', () => {
    expect(issues(parseSkillMd(doc('name: 42\ndescription: ok')))).toEqual([
      { path: 'skill_md.name', message: 'name must be a string' },
    ]);
    expect(issues(parseSkillMd(doc(`name: a\ndescription: ${'x'.repeat(1025)}`)))).toEqual([
      { path: 'skill_md.description', message: 'description must be at most 1024 characters' },
    ]);
    expect(parseSkillMd(doc(`name: a\ndescription: ${'x'.repeat(1024)}`)).ok).toBe(true);
    expect(issues(parseSkillMd(doc('name: a\ndescription: "  "')))[0]?.path).toBe('skill_md.description');
  });

  it('checks the optional fields of the format', () => {
    const found = issues(
      parseSkillMd(
        doc(
          [
            'name: a',
            'description: b',
            'license: 3',
            `compatibility: ${'c'.repeat(501)}`,
            'metadata: [x]',
            'allowed-tools: {a: 1}',
            'category: ""',
          ].join('\n'),
        ),
      ),
    );
    expect(found.map((i) => i.path)).toEqual([
      'skill_md.license',
      'skill_md.compatibility',
      'skill_md.metadata',
      'skill_md.allowed-tools',
      'skill_md.category',
    ]);
    expect(issues(parseSkillMd(doc('name: a\ndescription: b\nmetadata:\n  nested: {x: 1}')))).toEqual([
      { path: 'skill_md.metadata.nested', message: 'metadata values must be strings' },
    ]);
  });

  it('uses the root it is given for paths', () => {
    expect(issues(parseSkillMd('nope', 'body.skill_md'))[0]?.path).toBe('body.skill_md');
  });
});

describe('renderSkillMd', () => {
  it('round-trips through parseSkillMd, extras included', () => {
    const skill = {
      name: 'deploy-check',
      description: 'Checks a deploy: "quotes", colons: and\nnew lines',
      instructions: '## Steps\n\n- one\n- two',
      extras: { license: 'MIT', metadata: { category: 'ops', version: '2' }, 'allowed-tools': 'Bash' },
    };
    const text = renderSkillMd(skill);
    expect(text.startsWith('---\nname: deploy-check\n')).toBe(true);
    expect(text.endsWith('\n---\n\n## Steps\n\n- one\n- two\n')).toBe(true);
    expect(parseSkillMd(text)).toEqual({ ok: true, skill });
  });
});

describe('categoryOf', () => {
  it('takes a top-level category, else metadata.category, else null', () => {
    expect(categoryOf({ category: 'a', metadata: { category: 'b' } })).toBe('a');
    expect(categoryOf({ metadata: { category: 'b' } })).toBe('b');
    expect(categoryOf({ metadata: 'x' })).toBeNull();
    expect(categoryOf({})).toBeNull();
  });
});
