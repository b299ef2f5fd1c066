import { describe, expect, it } from 'vitest';
import { ManualTimers } from '../../test/helpers/manual-timers.js';
import { ManualClock } from '../lib/clock.js';
import { BusUnavailableError, busUrlForDisplay, type BusAdapter } from './bus-adapter.js';
import { openClusterBus } from './bus.js';
import { busSubjects, ClusterBus } from './cluster-bus.js';
import { EventBus, TOPICS, turnsTopicEvent, type BusEvent } from './event-bus.js';

const quiet = { info: () => undefined, warn: () => undefined };
const busConfig = (overrides: Partial<Parameters<typeof openClusterBus>[0]['config']> = {}) => ({
  driver: 'local' as const,
  url: null,
  namespace: 'gatehouse',
  max_message_bytes: 262_144,
  ...overrides,
});

/** An adapter that records what it is asked to send and lets the test play the server. */
function recordingAdapter() {
  const sent: Array<{ subject: string; payload: string }> = [];
  let deliver: (subject: string, payload: string) => void = () => undefined;
  let change: (up: boolean, reason: string) => void = () => undefined;
  let up = true;
  const adapter: BusAdapter = {
    driver: 'redis',
    target: 'redis://127.0.0.1:6379',
    connect(_subjects, onMessage, onConnection) {
      deliver = onMessage;
      change = onConnection;
      return Promise.resolve();
    },
    publish(subject, payload) {
      if (!up) return false;
      sent.push({ subject, payload });
      return true;
    },
    connected: () => up,
    close() {
      up = false;
      return Promise.resolve();
    },
  };
  return {
    adapter,
    sent,
    arrive: (subject: string, body: Record<string, unknown>) => deliver(subject, JSON.stringify(body)),
    drop(reason: string) {
      up = false;
      change(false, reason);
    },
    back() {
      up = true;
      change(true, 'reconnected');
    },
  };
}

describe('the subjects of a namespace', () => {
  it('prefix every subject, one per live-feed topic plus turn events, wake-ups and heartbeats', () => {
    const subjects = busSubjects('blue');
    expect(subjects.all).toHaveLength(TOPICS.length + 5);
    expect(subjects.all.every((subject) => subject.startsWith('blue.'))).toBe(true);
    expect(subjects.feed('turns')).toBe('blue.feed.turns');
    expect([subjects.turn, subjects.wake, subjects.session, subjects.interrupt, subjects.heartbeat]).toEqual([
      'blue.turn',
      'blue.wake',
      'blue.session',
      'blue.interrupt',
      'blue.heartbeat',
    ]);
  });
});

describe('ClusterBus over a recording adapter', () => {
  const start = async (clock = new ManualClock(1_000_000)) => {
    const fake = recordingAdapter();
    const timers = new ManualTimers();
    const lags: number[] = [];
    const reconnects: number[] = [];
    const bus = new ClusterBus({
      adapter: fake.adapter,
      instanceId: 'gw_me',
      namespace: 'ns',
      maxMessageBytes: 4_096,
      version: '1.0.0',
      clock,
      logger: quiet,
      timers,
      observer: { lag: (s) => void lags.push(s), reconnected: () => void reconnects.push(1) },
    });
    const heard: unknown[] = [];
    bus.receive({
      feed: (event) => void heard.push(['feed', event]),
      turn: (event) => void heard.push(['turn', event]),
      wake: (id) => void heard.push(['wake', id]),
      session: (key) => void heard.push(['session', key]),
      interrupt: (id, reason) => void heard.push(['interrupt', id, reason]),
    });
    await bus.start();
    return { bus, fake, timers, clock, lags, reconnects, heard };
  };

  it('stamps every message with its instance and clock, and beats at once and every 5 s', async () => {
    const { bus, fake, timers, clock } = await start();
    expect(fake.sent.map((m) => m.subject)).toEqual(['ns.heartbeat']);
    expect(JSON.parse(fake.sent[0]!.payload)).toEqual({ v: 1, from: 'gw_me', at: 1_000_000, version: '1.0.0' });
    clock.advance(250);
    bus.publishTurn({ eventId: 'evt_1', seq: 3, type: 'delta', data: { content: 'a' } });
    expect(JSON.parse(fake.sent[1]!.payload)).toEqual({
      v: 1,
      from: 'gw_me',
      at: 1_000_250,
      event_id: 'evt_1',
      seq: 3,
      type: 'delta',
      data: { content: 'a' },
    });
    timers.advance(5_000);
    expect(fake.sent.map((m) => m.subject)).toEqual(['ns.heartbeat', 'ns.turn', 'ns.heartbeat']);
    await bus.close();
    expect(JSON.parse(fake.sent.at(-1)!.payload)).toMatchObject({ from: 'gw_me', leaving: true });
    expect(timers.size).toBe(0);
  });

  it('ignores its own messages, measures lag from the sender clock, and checks each kind', async () => {
    const { fake, clock, lags, heard } = await start();
    fake.arrive('ns.feed.sessions', { v: 1, from: 'gw_me', at: 0, event: 'updated', data: {} });
    fake.arrive('ns.feed.sessions', { v: 1, from: 'gw_b', at: clock.now() - 40, event: 'updated', data: { id: 1 } });
    fake.arrive('ns.turn', { v: 1, from: 'gw_b', at: clock.now(), event_id: 'e', seq: 1.5, type: 'delta', data: {} });
    fake.arrive('ns.turn', { v: 1, from: 'gw_b', at: clock.now(), event_id: 'e', seq: 2, type: 'delta', data: [] });
    fake.arrive('ns.wake', { v: 1, from: 'gw_b', at: clock.now() + 5_000, event_id: 'evt_w' });
    fake.arrive('ns.unknown', { v: 1, from: 'gw_b', at: clock.now() });
    expect(heard).toEqual([
      ['feed', { topic: 'sessions', event: 'updated', data: { id: 1 } }],
      ['wake', 'evt_w'],
    ]);
    // A sender clock ahead of ours counts as no lag rather than a negative one.
    expect(lags).toEqual([0.04, 0, 0, 0, 0]);
  });

  it('sends and takes session wake-ups and interrupt requests, checking their shape', async () => {
    const { bus, fake, clock, heard } = await start();
    bus.publishSessionFree('cli:u:c1');
    expect(bus.publishInterrupt('evt_9', 'task_cancelled')).toBe(true);
    expect(fake.sent.slice(1).map((m) => [m.subject, JSON.parse(m.payload)])).toEqual([
      ['ns.session', { v: 1, from: 'gw_me', at: clock.now(), session_key: 'cli:u:c1' }],
      ['ns.interrupt', { v: 1, from: 'gw_me', at: clock.now(), event_id: 'evt_9', reason: 'task_cancelled' }],
    ]);
    fake.arrive('ns.session', { v: 1, from: 'gw_b', at: clock.now(), session_key: 'cli:u:c2' });
    fake.arrive('ns.session', { v: 1, from: 'gw_b', at: clock.now(), session_key: 7 });
    fake.arrive('ns.interrupt', { v: 1, from: 'gw_b', at: clock.now(), event_id: 'evt_1', reason: 'x'.repeat(500) });
    fake.arrive('ns.interrupt', { v: 1, from: 'gw_b', at: clock.now(), event_id: 'evt_2' });
    fake.arrive('ns.interrupt', { v: 1, from: 'gw_me', at: clock.now(), event_id: 'evt_3', reason: 'mine' });
    expect(heard).toEqual([
      ['session', 'cli:u:c2'],
      ['interrupt', 'evt_1', 'x'.repeat(200)],
    ]);
    fake.drop('gone');
    expect(bus.publishInterrupt('evt_9', 'task_cancelled')).toBe(false);
  });

  it('reports a lost connection in health and beats again once it is back', async () => {
    const { bus, fake, reconnects } = await start();
    fake.drop('read ECONNRESET');
    expect(bus.connected()).toBe(false);
    expect(bus.health()).toEqual({
      status: 'failing',
      message:
        "redis: connection lost (read ECONNRESET); reconnecting. Other gateways' events reach this one only " +
        'through the store, more slowly',
    });
    fake.back();
    expect(bus.health()).toEqual({ status: 'ok', message: 'redis: connected, 0 peers seen' });
    expect(reconnects).toEqual([1]);
    expect(fake.sent.filter((m) => m.subject === 'ns.heartbeat')).toHaveLength(2);
  });

  it('answers a newcomer’s heartbeat with its own at once, and only a newcomer’s', async () => {
    const { bus, fake } = await start();
    const beats = () => fake.sent.filter((m) => m.subject === 'ns.heartbeat').length;
    expect(beats()).toBe(1);
    fake.arrive('ns.heartbeat', { v: 1, from: 'gw_new', at: 0, version: '2.0.0' });
    expect(beats()).toBe(2);
    fake.arrive('ns.heartbeat', { v: 1, from: 'gw_new', at: 0, version: '2.0.0' });
    expect(beats()).toBe(2);
    expect(bus.peerList()).toEqual([{ instance_id: 'gw_new', version: '2.0.0', last_seen_seconds: 0 }]);
    fake.arrive('ns.heartbeat', { v: 1, from: 'gw_new', at: 0, version: '2.0.0', leaving: true });
    expect(bus.peerList()).toEqual([]);
  });

  it('remembers at most the peers it can hold and only those it heard within three beats', async () => {
    const { bus, fake, clock } = await start();
    for (let i = 0; i < 1_005; i++) fake.arrive('ns.heartbeat', { v: 1, from: `gw_${i}`, at: 0, version: 'x' });
    expect(bus.peerList()).toHaveLength(1_000);
    clock.advance(15_001);
    expect(bus.peerList()).toEqual([]);
  });
});

describe('the local bus', () => {
  it('is connected, sends nothing, has no peers and reports itself ok', async () => {
    const bus = await openClusterBus({
      config: busConfig(),
      instanceId: 'gw_one',
      version: '1',
      clock: new ManualClock(),
      logger: quiet,
    });
    expect(bus.shared).toBe(false);
    expect(bus.connected()).toBe(true);
    bus.publishFeed({ topic: 'sessions', event: 'created', data: {} });
    bus.publishTurn({ eventId: 'e', seq: 1, type: 'delta', data: {} });
    expect(bus.peerList()).toEqual([]);
    expect(bus.health()).toEqual({ status: 'ok', message: 'local (in-process)' });
    await bus.close();
    expect(bus.connected()).toBe(false);
  });
});

describe('openClusterBus refusals', () => {
  const open = (config: ReturnType<typeof busConfig>) =>
    openClusterBus({ config, instanceId: 'gw_x', version: '1', clock: new ManualClock(), logger: quiet }).then(
      () => null,
      (err: unknown) => err as Error,
    );

  it('a shared driver without a URL names the key, the variable and an example', async () => {
    const error = await open(busConfig({ driver: 'redis' }));
    expect(error).toBeInstanceOf(BusUnavailableError);
    expect(error!.message).toBe(
      'bus.driver is redis but bus.url is not set: set bus.url (or REDIS_URL), e.g. redis://127.0.0.1:6379, or ' +
        'set bus.driver: local to run a single gateway without a shared bus',
    );
  });

  it('a URL of another scheme is refused before any connection, shown without credentials', async () => {
    const error = await open(busConfig({ driver: 'nats', url: 'redis://u:pw@10.0.0.1:6379' }));
    expect(error!.message).toMatch(/^bus\.url redis:\/\/10\.0\.0\.1:6379 is not a nats:\/\/ URL: set bus\.url, e\.g\./);
    expect(error!.message).not.toContain('pw');
  });
});

describe('busUrlForDisplay', () => {
  it('keeps scheme, host, port and path and drops credentials and the query', () => {
    expect(busUrlForDisplay('rediss://default:secret@cache.internal:6380/2?x=secret')).toBe(
      'rediss://cache.internal:6380/2',
    );
    expect(busUrlForDisplay('nats://token@127.0.0.1:4222')).toBe('nats://127.0.0.1:4222');
    expect(busUrlForDisplay('not a url')).toBe('(not a URL)');
  });
});

describe('EventBus with a forwarder (a shared bus)', () => {
  it('delivers here directly, forwards what is published, and does not forward what is delivered', () => {
    const forwarded: BusEvent[] = [];
    const bus = new EventBus(10, (event) => forwarded.push(event));
    const heard: BusEvent[] = [];
    bus.subscribe(['sessions', 'turns'], (event) => {
      heard.push(event);
      throw new Error('a broken listener');
    });
    bus.publish('sessions', 'updated', { id: 's' });
    bus.deliver({ topic: 'sessions', event: 'deleted', data: { id: 'r' } });
    bus.deliver(turnsTopicEvent({ eventId: 'evt', seq: 2, type: 'delta', data: { content: 'x' } }));
    expect(heard.map((e) => e.event)).toEqual(['updated', 'deleted', 'delta']);
    expect(heard[2]!.data).toEqual({ event_id: 'evt', seq: 2, content: 'x' });
    expect(forwarded).toEqual([{ topic: 'sessions', event: 'updated', data: { id: 's' } }]);
  });

  it('counts as listened to when another process may listen, unlike the local bus', () => {
    expect(new EventBus(10, () => undefined).hasListeners('logs')).toBe(true);
    expect(new EventBus(10, () => undefined).hasLocalListeners('logs')).toBe(false);
    expect(new EventBus().hasListeners('logs')).toBe(false);
  });
});
