import type { Clock } from '../lib/clock.js';
import { parseJsonBounded } from '../lib/json.js';
import type { BusAdapter, BusDriver } from './bus-adapter.js';
import { TOPICS, type BusEvent, type FeedForward, type LocalFeed, type Topic } from './event-bus.js';

/** Version of the envelope every message carries (`v`); a message of another version is dropped. */
const ENVELOPE_VERSION = 1;
/** Heartbeat period by default; a peer is forgotten after `PEER_EXPIRY_BEATS` missed beats. */
export const HEARTBEAT_MS = 5_000;
const PEER_EXPIRY_BEATS = 3;
/** Peers remembered at most (a bound on a map filled from the network). */
const MAX_PEERS = 1_000;

/**
 * The subjects (Redis channels) of one namespace (ADR 0025): the live feed
 * per topic, turn events, wake-ups and heartbeats. Dots separate the parts,
 * NATS's token separator; Redis treats the names as plain strings.
 */
export function busSubjects(namespace: string): {
  feed: (topic: Topic) => string;
  turn: string;
  wake: string;
  session: string;
  interrupt: string;
  heartbeat: string;
  all: string[];
} {
  const feed = (topic: Topic) => `${namespace}.feed.${topic}`;
  const turn = `${namespace}.turn`;
  const wake = `${namespace}.wake`;
  const session = `${namespace}.session`;
  const interrupt = `${namespace}.interrupt`;
  const heartbeat = `${namespace}.heartbeat`;
  return {
    feed,
    turn,
    wake,
    session,
    interrupt,
    heartbeat,
    all: [...TOPICS.map(feed), turn, wake, session, interrupt, heartbeat],
  };
}

/** A turn event as it travels (the shape of the message path's `TurnEvent`). */
export interface BusTurnEvent {
  eventId: string;
  seq: number;
  type: string;
  data: Record<string, unknown>;
}

/** What this process does with messages from other processes. */
export interface BusReceivers {
  /** A live-feed event of another process: deliver it to this process's subscribers. */
  feed(event: BusEvent): void;
  /** A turn event of another process (already stored there): deliver it to this process's followers and waiters. */
  turn(event: BusTurnEvent): void;
  /** Another process says a turn changed in the store (an event too large for the bus): re-read it. */
  wake(eventId: string): void;
  /** Another process ended or paused a turn of this session: a lane of it waiting here tries again (ADR 0029). */
  session?(sessionKey: string): void;
  /** Another process asks to interrupt a turn: the process running it ends it (ADR 0029). */
  interrupt?(eventId: string, reason: string): void;
  /**
   * Whether anything here takes another process's events of this turn (a waiter, a follower, the `turns`
   * topic). A message about a turn nobody here follows is dropped unparsed (ADR 0046).
   */
  turnWanted?(eventId: string): boolean;
  /** Whether a lane here waits on this session; a freed session nobody waits on is dropped unparsed. */
  sessionWanted?(sessionKey: string): boolean;
}

/** Why a message was not sent or not taken. */
export type BusDropReason = 'too_large' | 'not_connected' | 'invalid';

/** Counters and timings of the bus, for metrics; every hook is optional. */
export interface BusObserver {
  /** Publish → receive, in seconds, from the sender's timestamp (clocks of different hosts may differ). */
  lag?(seconds: number): void;
  dropped?(reason: BusDropReason): void;
  /** The connection came back after a loss. */
  reconnected?(): void;
  sent?(): void;
  received?(): void;
}

/** The narrow logger the bus writes its state changes to. */
export interface BusLogger {
  info(fields: Record<string, unknown>, message: string): void;
  warn(fields: Record<string, unknown>, message: string): void;
}

/** A process seen on the bus recently. */
export interface BusPeer {
  instance_id: string;
  version: string;
  /** Whole seconds since its last message. */
  last_seen_seconds: number;
}

/** The bus's state for the health report (a component of ADR 0024's shape). */
export interface BusHealth {
  status: 'ok' | 'failing';
  message: string;
}

/** Delayed callbacks (the shape of `Timers` in turns/), injected so tests drive the heartbeat. */
export interface BusTimers {
  after(ms: number, fn: () => void): () => void;
}

/** `setTimeout`, unreferenced. */
export const busTimers: BusTimers = {
  after(ms, fn) {
    const timer = setTimeout(fn, ms);
    timer.unref();
    return () => clearTimeout(timer);
  },
};

export interface ClusterBusOptions {
  adapter: BusAdapter;
  /** This process (the message path's `owner`): stamped on every message; messages carrying it are ignored. */
  instanceId: string;
  /** `bus.namespace`: prefix of every subject. */
  namespace: string;
  /** `bus.max_message_bytes`: larger messages are dropped (counted), on sending and on receiving. */
  maxMessageBytes: number;
  /** The package version, told to peers in heartbeats. */
  version: string;
  clock: Clock;
  logger: BusLogger;
  observer?: BusObserver;
  timers?: BusTimers;
  /** Heartbeat period; default 5 s. */
  heartbeatMs?: number;
}

type Envelope = { v: number; from: string; at: number } & Record<string, unknown>;

/** How every message `send` writes begins: the envelope's version, then its sender. */
const ENVELOPE_START = `{"v":${ENVELOPE_VERSION},"from":"`;

/**
 * The first key of a message's body when it is `key` with a plain string value (`send` writes the envelope's
 * `v`, `from` and `at`, then the body's keys in order), read without parsing the message; undefined when the
 * message is laid out otherwise or the value has an escape (then it is parsed as a whole).
 */
export function peekFirstString(payload: string, key: string): string | undefined {
  if (!payload.startsWith(ENVELOPE_START)) return undefined;
  const fromEnd = payload.indexOf('"', ENVELOPE_START.length);
  if (fromEnd < 0 || !payload.startsWith(',"at":', fromEnd + 1)) return undefined;
  if (payload.lastIndexOf('\\', fromEnd) >= ENVELOPE_START.length) return undefined; // an escape in `from`
  let i = fromEnd + 7;
  for (let c = payload.charCodeAt(i); (c >= 48 && c <= 57) || c === 46 || c === 45; c = payload.charCodeAt(++i));
  const marker = `,"${key}":"`;
  if (!payload.startsWith(marker, i)) return undefined;
  const start = i + marker.length;
  const end = payload.indexOf('"', start);
  if (end < 0) return undefined;
  const value = payload.slice(start, end);
  return value.includes('\\') ? undefined : value;
}

/** A process heard from: its version, when, and the live-feed topics it listens to (null: not told, so all). */
interface Peer {
  version: string;
  seenAt: number;
  topics: ReadonlySet<string> | null;
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * The gateway's cross-process bus (ADR 0025) over one adapter: the live
 * feed, turn events and wake-ups, and heartbeats. Every message is a JSON
 * envelope `{v, from, at, …}` stamped with this instance and the sender's
 * clock; a process ignores its own (it delivered them locally, directly).
 * At most once: nothing is queued while the connection is down, nothing is
 * replayed; the store is the truth, and whoever needs certainty reads it.
 * With the local adapter nothing is encoded or sent at all.
 *
 * Nothing is sent that no other process takes (ADR 0046): turn events and
 * freed sessions only while a peer has been heard, a live-feed event only to
 * a topic a peer listens to (heartbeats name them); and what arrives for a
 * turn, session or topic nobody here follows is dropped before it is parsed.
 */
export class ClusterBus implements FeedForward {
  readonly instanceId: string;
  readonly driver: BusDriver;
  /** True when other processes can be reached (redis, nats). */
  readonly shared: boolean;
  private readonly subjects: ReturnType<typeof busSubjects>;
  private readonly topicBySubject: Map<string, Topic>;
  private readonly peers = new Map<string, Peer>();
  /** This process's live feed: the topics listened to here (told in heartbeats); unset: every topic. */
  private localFeed: LocalFeed | null = null;
  /** A heartbeat is queued to tell the peers of a topic newly listened to here. */
  private beatQueued = false;
  private receivers: BusReceivers | null = null;
  private stopBeat: (() => void) | null = null;
  private lost: { reason: string } | null = null;
  private state: 'new' | 'open' | 'closed' = 'new';
  /**
   * How this process's own messages begin (`send` writes `v` and `from` first): a server that echoes them
   * (Redis pub/sub) costs no parse. NATS is asked not to echo (`noEcho`).
   */
  private readonly ownPrefix: string;

  constructor(private readonly options: ClusterBusOptions) {
    this.instanceId = options.instanceId;
    this.driver = options.adapter.driver;
    this.shared = this.driver !== 'local';
    this.subjects = busSubjects(options.namespace);
    this.topicBySubject = new Map(TOPICS.map((topic) => [this.subjects.feed(topic), topic]));
    this.ownPrefix = `{"v":${ENVELOPE_VERSION},"from":${JSON.stringify(this.instanceId)},`;
  }

  /** Who receives other processes' messages; those arriving before this is set are dropped. */
  receive(receivers: BusReceivers): void {
    this.receivers = receivers;
  }

  /**
   * Connects and subscribes, then sends the first heartbeat and keeps
   * beating. Rejects with `BusUnavailableError` when the server cannot be
   * reached (nothing is left open).
   */
  async start(): Promise<void> {
    if (this.state !== 'new') return;
    await this.options.adapter.connect(
      this.subjects.all,
      (subject, payload) => this.take(subject, payload),
      (up, reason) => this.onConnection(up, reason),
    );
    this.state = 'open';
    if (this.shared) this.beat({ hello: true });
  }

  /** Sends a live-feed event of this process to the others, when one of them listens to its topic. */
  publishFeed(event: BusEvent): void {
    if (!this.listensElsewhere(event.topic)) return;
    this.send(this.subjects.feed(event.topic), { event: event.event, data: event.data });
  }

  /** True when a peer listens to `topic` (or did not say which topics it listens to). */
  listensElsewhere(topic: Topic): boolean {
    if (!this.shared) return false;
    for (const peer of this.peers.values()) if (!peer.topics || peer.topics.has(topic)) return true;
    return false;
  }

  /** This process's live feed, whose listened-to topics every heartbeat tells from now on. */
  watchLocalFeed(feed: LocalFeed): void {
    this.localFeed = feed;
    this.localTopicsGained();
  }

  /** A topic got its first listener here: the peers hear of it at once (one heartbeat for a burst). */
  localTopicsGained(): void {
    if (this.beatQueued || this.state !== 'open' || !this.shared) return;
    this.beatQueued = true;
    queueMicrotask(() => {
      this.beatQueued = false;
      this.beat();
    });
  }

  /**
   * Sends a turn event of this process (once stored) to the others. One too
   * large for the bus becomes a wake-up: the others read it from the store.
   */
  publishTurn(event: BusTurnEvent): void {
    if (!this.shared || this.peers.size === 0) return;
    const body = { event_id: event.eventId, seq: event.seq, type: event.type, data: event.data };
    if (this.send(this.subjects.turn, body) === 'too_large') this.publishWake(event.eventId);
  }

  /** Tells the others that a turn changed in the store: their waiters and followers of it read it again. */
  publishWake(eventId: string): void {
    if (!this.shared) return;
    this.send(this.subjects.wake, { event_id: eventId });
  }

  /** Tells the others that a turn of `sessionKey` ended or paused here: their lanes of it may go on. */
  publishSessionFree(sessionKey: string): void {
    if (!this.shared || this.peers.size === 0) return;
    this.send(this.subjects.session, { session_key: sessionKey });
  }

  /** Asks the others to interrupt a turn that runs in one of them; true when the request went out. */
  publishInterrupt(eventId: string, reason: string): boolean {
    if (!this.shared) return false;
    return this.send(this.subjects.interrupt, { event_id: eventId, reason }) === 'sent';
  }

  /** True while other processes' messages can arrive (always for the local bus: there are none to miss). */
  connected(): boolean {
    return this.state === 'open' && this.options.adapter.connected();
  }

  /** The bus component of the health report. */
  health(): BusHealth {
    const { driver } = this;
    if (this.state === 'closed') return { status: 'failing', message: `${driver}: closed` };
    if (!this.shared) return { status: 'ok', message: 'local (in-process)' };
    if (this.connected()) {
      const peers = this.peerList().length;
      return { status: 'ok', message: `${driver}: connected, ${peers} ${peers === 1 ? 'peer' : 'peers'} seen` };
    }
    return {
      status: 'failing',
      message:
        `${driver}: connection lost (${this.lost?.reason ?? 'not connected'}); reconnecting. Other gateways' ` +
        'events reach this one only through the store, more slowly',
    };
  }

  /** Processes heard from within the last three heartbeats, by instance id; empty for the local bus. */
  peerList(): BusPeer[] {
    const now = this.options.clock.now();
    this.expirePeers(now);
    return [...this.peers.entries()]
      .map(([instance_id, peer]) => ({
        instance_id,
        version: peer.version,
        last_seen_seconds: Math.max(0, Math.floor((now - peer.seenAt) / 1000)),
      }))
      .sort((a, b) => a.instance_id.localeCompare(b.instance_id));
  }

  /**
   * Sends a heartbeat now (the loop does so every period; tests call it). `hello`: this process has just
   * started, and knows no peer yet; every peer answers at once, also one that still remembers this instance
   * (restarted within three beats), so nothing waits for a peer's next beat.
   */
  beat(options: { hello?: boolean } = {}): void {
    this.stopBeat?.();
    this.stopBeat = null;
    if (this.state !== 'open' || !this.shared) return;
    const topics = this.localFeed?.localTopics();
    this.send(this.subjects.heartbeat, {
      version: this.options.version,
      ...(topics ? { topics } : {}),
      ...(options.hello ? { hello: true } : {}),
    });
    this.expirePeers(this.options.clock.now());
    this.stopBeat = (this.options.timers ?? busTimers).after(this.heartbeatMs, () => this.beat());
  }

  /** Stops the heartbeat, tells the peers this process leaves, and closes the connection; idempotent. */
  async close(): Promise<void> {
    if (this.state === 'closed') return;
    const wasOpen = this.state === 'open';
    this.stopBeat?.();
    this.stopBeat = null;
    if (wasOpen && this.shared) this.send(this.subjects.heartbeat, { version: this.options.version, leaving: true });
    this.state = 'closed';
    this.receivers = null;
    await this.options.adapter.close();
  }

  private get heartbeatMs(): number {
    return this.options.heartbeatMs ?? HEARTBEAT_MS;
  }

  private send(subject: string, body: Record<string, unknown>): 'sent' | BusDropReason {
    const { observer } = this.options;
    let payload: string;
    try {
      payload = JSON.stringify({ v: ENVELOPE_VERSION, from: this.instanceId, at: this.options.clock.now(), ...body });
    } catch {
      observer?.dropped?.('invalid'); // not JSON (a cycle, a BigInt): never on the wire
      return 'invalid';
    }
    if (this.tooLarge(payload)) {
      observer?.dropped?.('too_large');
      return 'too_large';
    }
    if (this.state !== 'open' || !this.options.adapter.publish(subject, payload)) {
      observer?.dropped?.('not_connected');
      return 'not_connected';
    }
    observer?.sent?.();
    return 'sent';
  }

  private tooLarge(payload: string): boolean {
    const max = this.options.maxMessageBytes;
    // A UTF-16 unit is at most 3 bytes in UTF-8: count exactly only when it could matter.
    return payload.length * 3 > max && Buffer.byteLength(payload, 'utf8') > max;
  }

  /** One message from the adapter: checked, stamped peers refreshed, then handed to its receiver. */
  private take(subject: string, payload: string): void {
    const { observer } = this.options;
    if (this.state !== 'open' || payload.startsWith(this.ownPrefix)) return;
    if (this.tooLarge(payload)) {
      observer?.dropped?.('too_large');
      return;
    }
    if (this.unwanted(subject, payload)) {
      observer?.received?.();
      return;
    }
    const parsed = parseJsonBounded(payload);
    const envelope = parsed.ok ? parsed.value : null;
    if (
      !isRecord(envelope) ||
      envelope.v !== ENVELOPE_VERSION ||
      typeof envelope.from !== 'string' ||
      typeof envelope.at !== 'number'
    ) {
      observer?.dropped?.('invalid');
      return;
    }
    const message = envelope as Envelope;
    if (message.from === this.instanceId) return; // delivered here directly when it was published
    const now = this.options.clock.now();
    observer?.received?.();
    observer?.lag?.(Math.max(0, now - message.at) / 1000);
    if (!this.dispatch(subject, message, now)) observer?.dropped?.('invalid');
  }

  /** True for a message nothing here takes, told by its subject and its first key, without parsing it. */
  private unwanted(subject: string, payload: string): boolean {
    const receivers = this.receivers;
    if (!receivers) return false;
    const topic = this.topicBySubject.get(subject);
    if (topic) return this.localFeed !== null && !this.localFeed.hasLocalListeners(topic);
    if (subject === this.subjects.turn && receivers.turnWanted) {
      const eventId = peekFirstString(payload, 'event_id');
      return eventId !== undefined && !receivers.turnWanted(eventId);
    }
    if (subject === this.subjects.session && receivers.sessionWanted) {
      const sessionKey = peekFirstString(payload, 'session_key');
      return sessionKey !== undefined && !receivers.sessionWanted(sessionKey);
    }
    return false;
  }

  private dispatch(subject: string, message: Envelope, now: number): boolean {
    const known = this.peers.get(message.from);
    if (known) known.seenAt = now;
    if (subject === this.subjects.heartbeat) {
      if (message.leaving === true) {
        this.peers.delete(message.from);
      } else {
        const version = typeof message.version === 'string' ? message.version : 'unknown';
        const topics = Array.isArray(message.topics)
          ? new Set(message.topics.filter((t): t is string => typeof t === 'string').slice(0, TOPICS.length))
          : null;
        // A newcomer (or one restarted under the same name) hears from this process at once, not at its next beat.
        const remembered = this.rememberPeer(message.from, { version, seenAt: now, topics });
        if (remembered && (!known || message.hello === true)) this.beat();
      }
      return true;
    }
    const receivers = this.receivers;
    const topic = this.topicBySubject.get(subject);
    if (topic) {
      if (typeof message.event !== 'string' || !isRecord(message.data)) return false;
      receivers?.feed({ topic, event: message.event, data: message.data });
      return true;
    }
    if (subject === this.subjects.turn) {
      const { event_id: eventId, seq, type, data } = message;
      if (typeof eventId !== 'string' || !Number.isSafeInteger(seq) || (seq as number) < 1) return false;
      if (typeof type !== 'string' || !isRecord(data)) return false;
      receivers?.turn({ eventId, seq: seq as number, type, data });
      return true;
    }
    if (subject === this.subjects.wake) {
      if (typeof message.event_id !== 'string') return false;
      receivers?.wake(message.event_id);
      return true;
    }
    if (subject === this.subjects.interrupt) {
      if (typeof message.event_id !== 'string' || typeof message.reason !== 'string') return false;
      receivers?.interrupt?.(message.event_id, message.reason.slice(0, 200));
      return true;
    }
    if (subject === this.subjects.session) {
      if (typeof message.session_key !== 'string') return false;
      receivers?.session?.(message.session_key);
      return true;
    }
    return false;
  }

  /** Remembers a peer; false when the map is full of live ones. */
  private rememberPeer(instanceId: string, peer: Peer): boolean {
    if (!this.peers.has(instanceId) && this.peers.size >= MAX_PEERS) this.expirePeers(peer.seenAt);
    if (!this.peers.has(instanceId) && this.peers.size >= MAX_PEERS) return false;
    this.peers.set(instanceId, peer);
    return true;
  }

  private expirePeers(now: number): void {
    const limit = now - PEER_EXPIRY_BEATS * this.heartbeatMs;
    for (const [id, peer] of this.peers) if (peer.seenAt < limit) this.peers.delete(id);
  }

  private onConnection(up: boolean, reason: string): void {
    if (this.state !== 'open') return;
    const { logger, observer } = this.options;
    if (!up) {
      this.lost = { reason };
      logger.warn(
        { source: 'bus', driver: this.driver, target: this.options.adapter.target, reason },
        'bus connection lost; reconnecting (turns still reach their end through the store)',
      );
      return;
    }
    this.lost = null;
    observer?.reconnected?.();
    logger.info({ source: 'bus', driver: this.driver, target: this.options.adapter.target }, 'bus connection restored');
    this.beat(); // the peers learn at once that this process is back
  }
}
