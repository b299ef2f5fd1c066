import { describe, expect, it } from 'vitest';
import { ManualTimers } from '../../test/helpers/manual-timers.js';
import { ManualClock } from '../lib/clock.js';
import { BusUnavailableError, busUrlForDisplay, type BusAdapter } from './bus-adapter.js';
import { openClusterBus } from './bus.js';
import { busSubjects, ClusterBus, peekFirstString } from './cluster-bus.js';
import { EventBus, TOPICS, turnsTopicEvent, type BusEvent, type FeedForward, type Topic } from './event-bus.js';

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
    const received: number[] = [];
    const bus = new ClusterBus({
      adapter: fake.adapter,
      instanceId: 'gw_me',
      namespace: 'ns',
      maxMessageBytes: 4_096,
      version: '1.0.0',
      clock,
      logger: quiet,
      timers,
      observer: {
        lag: (s) => void lags.push(s),
        reconnected: () => void reconnects.push(1),
        received: () => void received.push(1),
      },
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
    /** Another process's heartbeat (`topics`: the live-feed topics it listens to; absent: not told). */
    const peer = (from: string, topics?: Topic[]) =>
      fake.arrive('ns.heartbeat', { v: 1, from, at: clock.now(), version: '1.0.0', ...(topics ? { topics } : {}) });
    return { bus, fake, timers, clock, lags, reconnects, heard, received, peer };
  };

  it('stamps every message with its instance and clock, and beats at once and every 5 s', async () => {
    const { bus, fake, timers, clock, peer } = await start();
    expect(fake.sent.map((m) => m.subject)).toEqual(['ns.heartbeat']);
    expect(JSON.parse(fake.sent[0]!.payload)).toEqual({
      v: 1,
      from: 'gw_me',
      at: 1_000_000,
      version: '1.0.0',
      hello: true,
    });
    peer('gw_b'); // answered at once: a second heartbeat
    clock.advance(250);
    bus.publishTurn({ eventId: 'evt_1', seq: 3, type: 'delta', data: { content: 'a' } });
    expect(JSON.parse(fake.sent[2]!.payload)).toEqual({
      v: 1,
      from: 'gw_me',
      at: 1_000_250,
      event_id: 'evt_1',
      seq: 3,
      type: 'delta',
      data: { content: 'a' },
    });
    timers.advance(5_000);
    expect(fake.sent.map((m) => m.subject)).toEqual(['ns.heartbeat', 'ns.heartbeat', 'ns.turn', 'ns.heartbeat']);
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
    const { bus, fake, clock, heard, peer } = await start();
    peer('gw_b');
    bus.publishSessionFree('cli:u:c1');
    expect(bus.publishInterrupt('evt_9', 'task_cancelled')).toBe(true);
    expect(fake.sent.slice(2).map((m) => [m.subject, JSON.parse(m.payload)])).toEqual([
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

  it('answers a newcomer’s heartbeat (or a restarted one’s hello) with its own at once, and only those', async () => {
    const { bus, fake } = await start();
    const beats = () => fake.sent.filter((m) => m.subject === 'ns.heartbeat').length;
    expect(beats()).toBe(1);
    fake.arrive('ns.heartbeat', { v: 1, from: 'gw_new', at: 0, version: '2.0.0' });
    expect(beats()).toBe(2);
    fake.arrive('ns.heartbeat', { v: 1, from: 'gw_new', at: 0, version: '2.0.0' });
    expect(beats()).toBe(2);
    expect(bus.peerList()).toEqual([{ instance_id: 'gw_new', version: '2.0.0', last_seen_seconds: 0 }]);
    // Restarted under the same name before it was forgotten: its first beat says so, and is answered.
    fake.arrive('ns.heartbeat', { v: 1, from: 'gw_new', at: 0, version: '2.0.1', hello: true });
    expect(beats()).toBe(3);
    expect(JSON.parse(fake.sent.at(-1)!.payload)).not.toHaveProperty('hello');
    fake.arrive('ns.heartbeat', { v: 1, from: 'gw_new', at: 0, version: '2.0.0', leaving: true });
    expect(bus.peerList()).toEqual([]);
  });

  it('sends turn events and freed sessions only while another process is heard; interrupts always', async () => {
    const { bus, fake, clock, peer } = await start();
    const subjects = () => fake.sent.slice(1).map((m) => m.subject);
    bus.publishTurn({ eventId: 'evt_1', seq: 1, type: 'status', data: { status: 'running' } });
    bus.publishSessionFree('cli:u:c1');
    bus.publishWake('evt_1');
    expect(bus.publishInterrupt('evt_1', 'cancelled')).toBe(true);
    expect(subjects()).toEqual(['ns.wake', 'ns.interrupt']);
    peer('gw_b');
    bus.publishTurn({ eventId: 'evt_1', seq: 2, type: 'done', data: {} });
    bus.publishSessionFree('cli:u:c1');
    expect(subjects().slice(2)).toEqual(['ns.heartbeat', 'ns.turn', 'ns.session']);
    // Gone quiet for three beats: forgotten at this process's next beat, and nothing is sent for it.
    clock.advance(15_001);
    bus.beat();
    bus.publishTurn({ eventId: 'evt_2', seq: 1, type: 'done', data: {} });
    expect(subjects().slice(5)).toEqual(['ns.heartbeat']);
    peer('gw_c');
    fake.arrive('ns.heartbeat', { v: 1, from: 'gw_c', at: clock.now(), version: '1', leaving: true });
    bus.publishTurn({ eventId: 'evt_2', seq: 2, type: 'done', data: {} });
    expect(subjects().slice(6)).toEqual(['ns.heartbeat']);
  });

  it('sends a live-feed event only where a peer listens to its topic, and tells its own topics at once', async () => {
    const { bus, fake, peer } = await start();
    const feeds = () => fake.sent.filter((m) => m.subject.startsWith('ns.feed.')).map((m) => m.subject);
    const heartbeats = () => fake.sent.filter((m) => m.subject === 'ns.heartbeat').map((m) => JSON.parse(m.payload));
    const local = new EventBus(10, bus);
    await Promise.resolve();
    // Watching the feed tells the peers at once what it listens to: nothing yet.
    expect(heartbeats().at(-1)).toMatchObject({ topics: [] });
    expect(local.hasListeners('sessions')).toBe(false);
    local.publish('sessions', 'updated', { id: 's' });
    peer('gw_b', ['logs']);
    local.publish('sessions', 'updated', { id: 's' });
    local.publish('logs', 'log', { message: 'm' });
    expect(feeds()).toEqual(['ns.feed.logs']);
    expect([local.hasListeners('logs'), local.hasListeners('sessions')]).toEqual([true, false]);
    // A peer that does not say what it listens to (an earlier version) gets every topic.
    peer('gw_old');
    local.publish('sessions', 'updated', { id: 's' });
    expect(feeds()).toEqual(['ns.feed.logs', 'ns.feed.sessions']);
    // A topic's first listener here: one heartbeat for the burst, naming the topics.
    const before = heartbeats().length;
    const off = local.subscribe(['turns', 'cron'], () => undefined);
    local.subscribe(['turns'], () => undefined);
    local.subscribe(['memory'], () => undefined);
    expect(heartbeats()).toHaveLength(before);
    await Promise.resolve();
    expect(heartbeats()).toHaveLength(before + 1);
    expect(heartbeats().at(-1)).toMatchObject({ topics: ['turns', 'cron', 'memory'] });
    off();
    local.subscribe(['turns'], () => undefined); // not a first listener: no heartbeat
    await Promise.resolve();
    expect(heartbeats()).toHaveLength(before + 1);
  });

  it('drops unparsed what nothing here takes: a topic, a turn or a session nobody here follows', async () => {
    const { bus, fake, clock, heard, received } = await start();
    const local = new EventBus(10, bus);
    const followed = new Set(['evt_f']);
    const waiting = new Set(['s_w']);
    bus.receive({
      feed: (event) => void heard.push(['feed', event]),
      turn: (event) => void heard.push(['turn', event.eventId]),
      wake: (id) => void heard.push(['wake', id]),
      session: (key) => void heard.push(['session', key]),
      turnWanted: (id) => followed.has(id),
      sessionWanted: (key) => waiting.has(key),
    });
    local.subscribe(['logs'], (event) => void heard.push(['local', event.event]));
    const at = clock.now();
    const raw = (subject: string, payload: string) =>
      fake.arrive(subject, JSON.parse(payload) as Record<string, unknown>);
    raw('ns.feed.sessions', `{"v":1,"from":"gw_b","at":${at},"event":"updated","data":{}}`);
    raw('ns.feed.logs', `{"v":1,"from":"gw_b","at":${at},"event":"log","data":{}}`);
    for (const id of ['evt_x', 'evt_f']) {
      fake.arrive('ns.turn', { v: 1, from: 'gw_b', at, event_id: id, seq: 1, type: 'done', data: {} });
    }
    for (const key of ['s_x', 's_w']) fake.arrive('ns.session', { v: 1, from: 'gw_b', at, session_key: key });
    expect(heard).toEqual([
      ['feed', { topic: 'logs', event: 'log', data: {} }],
      ['turn', 'evt_f'],
      ['session', 's_w'],
    ]);
    // Every one of them arrived (and is counted so).
    expect(received).toHaveLength(6);
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

/** A cross-process side of the feed where another process listens to `elsewhere`. */
function forwarder(elsewhere: Topic[] = [...TOPICS]) {
  const forwarded: BusEvent[] = [];
  const forward: FeedForward = {
    publishFeed: (event) => void forwarded.push(event),
    listensElsewhere: (topic) => elsewhere.includes(topic),
    watchLocalFeed: () => undefined,
    localTopicsGained: () => undefined,
  };
  return { forward, forwarded };
}

describe('EventBus with a forwarder (a shared bus)', () => {
  it('delivers here directly, forwards what is published, and does not forward what is delivered', () => {
    const { forward, forwarded } = forwarder();
    const bus = new EventBus(10, forward);
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

  it('counts as listened to when another process listens to the topic, unlike the local bus', () => {
    const bus = new EventBus(10, forwarder(['logs']).forward);
    expect(bus.hasListeners('logs')).toBe(true);
    expect(bus.hasListeners('cron')).toBe(false);
    expect(bus.hasLocalListeners('logs')).toBe(false);
    expect(new EventBus().hasListeners('logs')).toBe(false);
  });
});

describe('peekFirstString', () => {
  const envelope = (body: Record<string, unknown>) =>
    JSON.stringify({ v: 1, from: 'gw_b', at: 1_700_000_000_123, ...body });
  it('reads the first key of a body as sent, and nothing it cannot be sure of', () => {
    expect(peekFirstString(envelope({ event_id: 'evt_1', seq: 1 }), 'event_id')).toBe('evt_1');
    expect(peekFirstString(envelope({ session_key: 'cli:u:c' }), 'session_key')).toBe('cli:u:c');
    // Not the first key, another key, a value with an escape, another layout: undefined (parse it whole).
    expect(peekFirstString(envelope({ seq: 1, event_id: 'evt_1' }), 'event_id')).toBeUndefined();
    expect(peekFirstString(envelope({ event_id: 'evt_1' }), 'session_key')).toBeUndefined();
    expect(peekFirstString(envelope({ session_key: 'a"b' }), 'session_key')).toBeUndefined();
    expect(peekFirstString(envelope({ session_key: 'a\\b' }), 'session_key')).toBeUndefined();
    expect(peekFirstString(JSON.stringify({ from: 'gw_b', v: 1, at: 1, event_id: 'e' }), 'event_id')).toBeUndefined();
    // A `from` with an escaped quote, followed by what looks like the rest of an envelope.
    expect(peekFirstString(String.raw`{"v":1,"from":"gw_\","at":1,"event_id":"e"}`, 'event_id')).toBeUndefined();
    expect(peekFirstString('{"v":1,"from":"gw_b","at":1,"event_id":"unterminated', 'event_id')).toBeUndefined();
  });
});
