import { describe, expect, it } from 'vitest';
import { didYouMean } from './did-you-mean.js';

describe('didYouMean', () => {
  const commands = ['serve', 'init', 'chat', 'status', 'logs', 'pair', 'token', 'whoami', 'doctor', 'security'];
  it.each([
    ['stauts', 'status'],
    ['stats', 'status'],
    ['tokne', 'token'],
    ['docter', 'doctor'],
    ['lgos', 'logs'],
    ['Serve', 'serve'],
  ])('%s → %s', (word, expected) => {
    expect(didYouMean(word, commands)).toBe(expected);
  });
  it.each([['xyz'], ['deploy'], ['status']])('%s → nothing (too far, or exact)', (word) => {
    expect(didYouMean(word, commands)).toBeUndefined();
  });
  it('nothing when two candidates are equally close', () => {
    expect(didYouMean('cat', ['bat', 'hat'])).toBeUndefined();
  });
  it('configuration keys', () => {
    expect(didYouMean('gatway', ['data_dir', 'gateway', 'storage'])).toBe('gateway');
    expect(didYouMean('max_body_byte', ['host', 'port', 'max_body_bytes', 'auth'])).toBe('max_body_bytes');
  });
});
