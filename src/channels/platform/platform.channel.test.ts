import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../lib/clock.js';
import { createLogger } from '../../logs/index.js';
import { ChannelStats } from '../channel.js';
import { createPlatformChannel } from './platform.channel.js';
import { PlatformAuthError, type PlatformEventHandler, type PlatformTransport } from './platform.transport.js';

/** A transport scripted by the test: connect outcomes in order, and a receive the test ends. */
function scriptedTransport(connects: Array<Error | null>) {
  const state = {
    connectCalls: 0,
    receiving: 0,
    endReceive: null as ((err?: Error) => void) | null,
    disconnects: 0,
  };
  const transport: PlatformTransport = {
    platform: 'testchat',
    maxMessageLength: 100,
    minEditIntervalMs: 0,
    connect: async () => {
      const outcome = connects[state.connectCalls++] ?? null;
      if (outcome) throw outcome;
    },
    receive: (_handle: PlatformEventHandler, signal: AbortSignal) =>
      new Promise<void>((resolve, reject) => {
        state.receiving++;
        state.endReceive = (err) => (err ? reject(err) : resolve());
        signal.addEventListener('abort', () => resolve(), { once: true });
      }),
    disconnect: async () => void state.disconnects++,
    send: async () => ({ messageId: '1' }),
    edit: async () => undefined,
  };
  return { transport, state };
}

/** The message path is not reached by these tests: every door call fails the test. */
const noMessages = {
  submit: () => Promise.reject(new Error('unexpected submit')),
  follow: () => {
    throw new Error('unexpected follow');
  },
  turn: () => Promise.reject(new Error('unexpected turn')),
  tap: () => () => undefined,
};

function build(connects: Array<Error | null>) {
  const clock = new ManualClock(0);
  const waits: number[] = [];
  const { transport, state } = scriptedTransport(connects);
  const stats = new ChannelStats(clock);
  const channel = createPlatformChannel({
    transport,
    groups: false,
    authMode: 'open',
    messages: noMessages,
    pairing: { verify: () => Promise.reject(new Error('unexpected verify')) },
    stats,
    clock,
    logger: createLogger({ level: 'error', stdout: { write: () => undefined } }),
    wait: async (ms) => {
      waits.push(ms);
      clock.advance(ms);
      await new Promise((resolve) => setImmediate(resolve));
    },
  });
  return { channel, state, stats, waits, clock };
}

async function until(what: string, probe: () => boolean): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (probe()) return;
    await new Promise((resolve) => setImmediate(resolve));
  }
  throw new Error(`never: ${what}`);
}

describe('platform channel lifecycle', () => {
  it('connects, reports the connection, and stops the receive loop on stop()', async () => {
    const { channel, state, stats } = build([null]);
    await channel.start();
    expect(channel.connected()).toBe(true);
    expect(stats.error).toBeNull();
    expect(stats.lastConnectedAt).toBe(0);
    await until('receiving', () => state.receiving === 1);
    await channel.stop();
    expect(channel.connected()).toBe(false);
    expect(state.disconnects).toBe(1);
  });

  it('rejects start with the first failure, then keeps trying with backoff until connected', async () => {
    const { channel, state, stats, waits } = build([new Error('down 1'), new Error('down 2'), null]);
    await expect(channel.start()).rejects.toThrow('down 1');
    await until('connected', () => channel.connected());
    expect(waits).toEqual([1000, 2000]);
    expect(stats.error).toBeNull();
    expect(channel.failures()).toBe(0);
    expect(state.connectCalls).toBe(3);
    await channel.stop();
  });

  it('reports a lost connection (error, not connected) and reconnects by itself', async () => {
    const { channel, state, stats, waits } = build([null, new Error('still down'), null]);
    await channel.start();
    await until('receiving', () => state.receiving === 1);
    state.endReceive!(new Error('socket closed'));
    await until('lost', () => !channel.connected());
    expect(stats.error).toContain('connection lost');
    await until('reconnected', () => channel.connected() && state.receiving === 2);
    expect(stats.error).toBeNull();
    expect(waits).toEqual([1000, 2000]);
    await channel.stop();
  });

  it('does not retry a refused token; a reconnect (start) tries again', async () => {
    const { channel, state, stats, waits } = build([new PlatformAuthError('token refused'), null]);
    await expect(channel.start()).rejects.toThrow('token refused');
    await new Promise((resolve) => setImmediate(resolve));
    expect(state.connectCalls).toBe(1);
    expect(waits).toEqual([]);
    expect(stats.error).toContain('token refused');
    await channel.start();
    expect(channel.connected()).toBe(true);
    await channel.stop();
  });
});
