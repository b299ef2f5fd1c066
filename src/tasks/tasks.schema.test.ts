import { describe, expect, it } from 'vitest';
import {
  canTransition,
  createTaskBody,
  isAgentAssignee,
  patchTaskBody,
  priorityWord,
  TASK_STATUSES,
  type TaskStatus,
} from './tasks.schema.js';

describe('priority words', () => {
  it.each([
    [0, 'low'],
    [3, 'low'],
    [4, 'normal'],
    [5, 'normal'],
    [6, 'normal'],
    [7, 'high'],
    [8, 'high'],
    [9, 'urgent'],
    [10, 'urgent'],
  ] as const)('%i is %s', (value, word) => {
    expect(priorityWord(value)).toBe(word);
  });
});

describe('status transitions', () => {
  const allowed: Array<[TaskStatus, TaskStatus]> = [
    ['pending', 'running'],
    ['pending', 'completed'],
    ['pending', 'failed'],
    ['pending', 'cancelled'],
    ['running', 'completed'],
    ['running', 'failed'],
    ['running', 'cancelled'],
  ];
  const key = (from: TaskStatus, to: TaskStatus) => `${from}->${to}`;
  const allowedKeys = new Set(allowed.map(([from, to]) => key(from, to)));

  for (const from of TASK_STATUSES) {
    for (const to of TASK_STATUSES) {
      const expected = from === to || allowedKeys.has(key(from, to));
      it(`${from} -> ${to} is ${expected ? 'allowed' : 'refused'}`, () => {
        expect(canTransition(from, to)).toBe(expected);
      });
    }
  }
});

describe('agent assignment', () => {
  it('runs tasks with no assignee or assignee agent, not a person’s', () => {
    expect(isAgentAssignee(null)).toBe(true);
    expect(isAgentAssignee('agent')).toBe(true);
    expect(isAgentAssignee('alice')).toBe(false);
  });
});

describe('create body', () => {
  const issues = (body: unknown) => {
    const result = createTaskBody.safeParse(body);
    return result.success ? [] : result.error.issues.map((i) => i.path.join('.'));
  };

  it('accepts a full valid body', () => {
    expect(
      issues({
        title: 't',
        description: 'd',
        priority: 0,
        labels: ['a'],
        assignee: 'bob',
        source: 'cron',
        board_id: 'b',
        parent_task_id: 'tsk_1',
        metadata: { k: [1] },
      }),
    ).toEqual([]);
  });

  it.each([
    ['priority true', { title: 't', priority: true }, 'priority'],
    ['priority "high"', { title: 't', priority: 'high' }, 'priority'],
    ['priority null', { title: 't', priority: null }, 'priority'],
    ['priority 5.5', { title: 't', priority: 5.5 }, 'priority'],
    ['priority 11', { title: 't', priority: 11 }, 'priority'],
    ['priority -1', { title: 't', priority: -1 }, 'priority'],
    ['labels "x"', { title: 't', labels: 'x' }, 'labels'],
    ['labels [1,2]', { title: 't', labels: [1, 2] }, 'labels.0'],
    ['metadata []', { title: 't', metadata: [] }, 'metadata'],
    ['metadata null', { title: 't', metadata: null }, 'metadata'],
    ['source bogus', { title: 't', source: 'email' }, 'source'],
    ['title missing', {}, 'title'],
    ['title empty', { title: '' }, 'title'],
    ['title blank', { title: '   ' }, 'title'],
    ['title number', { title: 1 }, 'title'],
  ])('%s is refused', (_name, body, path) => {
    expect(issues(body)).toContain(path);
  });

  it('lists every problem at once', () => {
    expect(issues({ priority: true, labels: 'x', metadata: [] }).sort()).toEqual(
      ['labels', 'metadata', 'priority', 'title'].sort(),
    );
  });

  it.each([[[]], [null], ['text'], [3]])('a body of %j is refused', (body) => {
    expect(createTaskBody.safeParse(body).success).toBe(false);
  });
});

describe('patch body', () => {
  it('accepts an empty patch and checks only present fields', () => {
    expect(patchTaskBody.safeParse({}).success).toBe(true);
    expect(patchTaskBody.safeParse({ progress: 0.5 }).success).toBe(true);
    expect(patchTaskBody.safeParse({ title: '' }).success).toBe(false);
    expect(patchTaskBody.safeParse({ priority: true }).success).toBe(false);
  });

  it('bounds progress to 0..1 and status to the known values', () => {
    expect(patchTaskBody.safeParse({ progress: 1.5 }).success).toBe(false);
    expect(patchTaskBody.safeParse({ progress: -0.1 }).success).toBe(false);
    expect(patchTaskBody.safeParse({ progress: '0.5' }).success).toBe(false);
    expect(patchTaskBody.safeParse({ status: 'done' }).success).toBe(false);
  });

  it('clears optional text fields with null, but not the others', () => {
    expect(patchTaskBody.safeParse({ assignee: null, description: null, board_id: null }).success).toBe(true);
    expect(patchTaskBody.safeParse({ labels: null }).success).toBe(false);
    expect(patchTaskBody.safeParse({ title: null }).success).toBe(false);
  });
});
