import { afterEach, beforeEach, expect, it } from 'vitest';
import { describeBackends, type TestStore } from '../../test/helpers/stores.js';
import { ensureSession, getSession } from '../sessions/index.js';
import { history } from '../sessions/sessions.repo.js';
import { spentNanoUsdSince } from '../usage/index.js';
import { storeTurnWrites, type TurnWrites } from './turn-writes.js';

const NOW = '2026-11-21T10:00:00.000Z';

function writesFor(sessionKey: string): TurnWrites {
  return {
    messages: [
      {
        id: 'msg_0001',
        sessionKey,
        contextEpoch: 0,
        role: 'assistant',
        content: 'the reply',
        toolCalls: null,
        toolCallId: null,
        name: null,
        eventId: 'evt_1',
        createdAt: NOW,
      },
    ],
    usage: [
      {
        id: 'use_0001',
        eventId: 'evt_1',
        sessionKey,
        channel: 'api',
        model: 'm',
        inputTokens: 10,
        outputTokens: 5,
        costNanoUsd: 1234,
        now: NOW,
      },
    ],
  };
}

describeBackends('storeTurnWrites', (backend) => {
  let t: TestStore;
  beforeEach(async () => {
    t = await backend.open();
  });
  afterEach(async () => {
    await t.cleanup();
  });

  it('stores the reply and the usage once, however often the same writes are committed', async () => {
    const key = 'gateway:api:writes';
    await t.store.writer.run((trx) => ensureSession(trx, { key, channel: 'api', now: NOW }));
    const writes = writesFor(key);
    // The second commit repeats the first (its answer was lost): nothing twice.
    await t.store.writer.run((trx) => storeTurnWrites(trx, writes, NOW));
    await t.store.writer.run((trx) => storeTurnWrites(trx, writes, NOW));
    const stored = await history(t.store.db, key, 0, 10);
    expect(stored.items.map((m) => m.content)).toEqual(['the reply']);
    expect((await getSession(t.store.db, key))?.messageCount).toBe(1);
    expect(await spentNanoUsdSince(t.store.db, '2026-01-01T00:00:00.000Z')).toBe(1234);
  });
});
