import { describe, expect, it } from 'vitest';
import { backoffMs, pairingText, refusalText, triage } from './platform.rules.js';
import type { PlatformEvent } from './platform.transport.js';

const dm = (text: string): PlatformEvent => ({
  deliveryId: '1',
  chatId: '10',
  userId: '20',
  chatKind: 'direct',
  text,
  addressed: true,
});
const group = (text: string, addressed: boolean): PlatformEvent => ({ ...dm(text), chatKind: 'group', addressed });

describe('triage', () => {
  it('starts a turn for a direct message and ignores a blank one', () => {
    expect(triage(dm('hello'), { groups: false })).toEqual({ kind: 'turn' });
    expect(triage(dm('   '), { groups: false })).toEqual({ kind: 'ignore' });
  });

  it('reads /pair <code> in a direct message, upper-cased, and a bare /pair as a missing code', () => {
    expect(triage(dm('/pair abcd2345'), { groups: false })).toEqual({ kind: 'pair', code: 'ABCD2345' });
    expect(triage(dm('/pair'), { groups: false })).toEqual({ kind: 'pair', code: '' });
    expect(triage(dm('/pairing is fun'), { groups: false })).toEqual({ kind: 'turn' });
  });

  it('keeps group chats off unless groups is set', () => {
    expect(triage(group('hi bot', true), { groups: false })).toEqual({ kind: 'ignore' });
  });

  it('in a group, only a mention or a reply to the bot starts a turn', () => {
    expect(triage(group('chatter', false), { groups: true })).toEqual({ kind: 'ignore' });
    expect(triage(group('hi bot', true), { groups: true })).toEqual({ kind: 'turn' });
  });

  it('refuses /pair in a group (the code would be seen by everyone)', () => {
    expect(triage(group('/pair ABCD2345', true), { groups: true })).toEqual({ kind: 'pair_in_group' });
  });

  it('passes the message path commands through as text', () => {
    for (const command of ['/new', '/status', '/approve evt_1', '/deny evt_1']) {
      expect(triage(dm(command), { groups: false })).toEqual({ kind: 'turn' });
    }
  });
});

describe('texts', () => {
  it('tells an unpaired user how to pair in pairing mode, and refuses plainly otherwise', () => {
    expect(refusalText('pairing', 'telegram')).toContain('/pair <code>');
    expect(refusalText('pairing', 'telegram')).toContain('gatehouse pair telegram');
    expect(refusalText('allowlist', 'telegram')).not.toContain('/pair');
  });

  it('answers each pairing outcome', () => {
    expect(pairingText({ ok: true })).toMatch(/^Paired/);
    expect(pairingText({ ok: false, reason: 'invalid_code', attempts: 2 })).toContain('2 wrong');
    expect(
      pairingText({ ok: false, reason: 'locked', retryAfterSeconds: 300, attempts: 5, justLocked: true }),
    ).toContain('300 seconds');
  });
});

describe('backoffMs', () => {
  it('doubles from 1 s to a 60 s ceiling', () => {
    expect([1, 2, 3, 4, 5, 6, 7, 8, 50].map(backoffMs)).toEqual([
      1000, 2000, 4000, 8000, 16000, 32000, 60000, 60000, 60000,
    ]);
  });
});
