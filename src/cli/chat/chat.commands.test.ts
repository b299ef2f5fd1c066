import { describe, expect, it } from 'vitest';
import { isSessionKey, parseLine } from './chat.commands.js';

describe('parseLine', () => {
  it('reads known commands with their arguments, aliases included', () => {
    expect(parseLine('/approve weekly-report')).toEqual({ kind: 'command', name: 'approve', args: 'weekly-report' });
    expect(parseLine('  /switch   gateway:cli:abc  ')).toEqual({
      kind: 'command',
      name: 'switch',
      args: 'gateway:cli:abc',
    });
    expect(parseLine('/QUIT')).toEqual({ kind: 'command', name: 'quit', args: '' });
    expect(parseLine('/exit')).toEqual({ kind: 'command', name: 'quit', args: '' });
  });

  it('refuses an unknown command instead of sending it', () => {
    expect(parseLine('/aprove x')).toEqual({ kind: 'unknown', name: 'aprove' });
  });

  it('sends messages, a path at the start and //text included', () => {
    expect(parseLine('hello\nworld')).toEqual({ kind: 'message', text: 'hello\nworld' });
    expect(parseLine('/etc/hosts is a file')).toEqual({ kind: 'message', text: '/etc/hosts is a file' });
    expect(parseLine('//new is a command')).toEqual({ kind: 'message', text: '/new is a command' });
    expect(parseLine('   ')).toEqual({ kind: 'empty' });
  });
});

describe('isSessionKey', () => {
  it('accepts gateway keys only', () => {
    expect(isSessionKey('gateway:cli:abc')).toBe(true);
    expect(isSessionKey('gateway:')).toBe(false);
    expect(isSessionKey('cli:abc')).toBe(false);
    expect(isSessionKey('gateway:a b')).toBe(false);
  });
});
