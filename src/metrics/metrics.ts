import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

/** How often the event-loop lag metric samples, ms. */
const EVENT_LOOP_SAMPLE_MS = 100;

/** The gateway's Prometheus metrics, in a registry of its own (several gateways may share a process in tests). */
export class GatewayMetrics {
  readonly registry = new Registry();
  readonly requests = new Counter({
    name: 'gatehouse_http_requests_total',
    help: 'HTTP requests by route pattern, method and status',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [this.registry],
  });
  /** Requests for the dashboard's static files (`/`, `/assets/*`), kept out of `requests` (ADR 0021). */
  readonly dashboardRequests = new Counter({
    name: 'gatehouse_dashboard_requests_total',
    help: 'Requests for the dashboard page and its static assets, by status (not API traffic)',
    labelNames: ['status'] as const,
    registers: [this.registry],
  });
  readonly turnDuration = new Histogram({
    name: 'gatehouse_turn_duration_seconds',
    help: 'Time from a turn starting to run to its outcome, by status',
    labelNames: ['status'] as const,
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
    registers: [this.registry],
  });
  readonly idempotencyReplays = new Counter({
    name: 'gatehouse_idempotency_replays_total',
    help: 'Keyed requests answered from an existing idempotency record',
    registers: [this.registry],
  });
  readonly storeBatch = new Histogram({
    name: 'gatehouse_store_commit_seconds',
    help: 'Group-commit latency: from a batch starting to its ops being durable',
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
    registers: [this.registry],
  });
  /** Every statement the store sends (transaction control included): a turn's database round trips. */
  readonly storeStatements = new Counter({
    name: 'gatehouse_store_statements_total',
    help: 'Statements sent to the database, transaction control (begin, commit, rollback) included',
    registers: [this.registry],
  });

  /** The cross-process bus (ADR 0025): publish → receive, from the sender's timestamp. */
  readonly busLag = new Histogram({
    name: 'gatehouse_bus_lag_seconds',
    help: 'Cross-process bus: time from a message being published (sender clock) to its arrival here',
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5],
    registers: [this.registry],
  });
  readonly busReconnects = new Counter({
    name: 'gatehouse_bus_reconnects_total',
    help: 'Cross-process bus: connections restored after a loss',
    registers: [this.registry],
  });
  readonly busDropped = new Counter({
    name: 'gatehouse_bus_dropped_total',
    help: 'Cross-process bus: messages not sent or not taken, by reason (too_large, not_connected, invalid)',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });
  readonly busMessages = new Counter({
    name: 'gatehouse_bus_messages_total',
    help: 'Cross-process bus: messages sent to and received from other gateways',
    labelNames: ['direction'] as const,
    registers: [this.registry],
  });

  /** New work refused by load shedding (`limits.overload`, ADR 0043), by reason. */
  readonly shed = new Counter({
    name: 'gatehouse_shed_total',
    help: 'New work refused with 503 because the gateway could not take it now, by reason (memory, event_loop, queue_wait, queue_full)',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });

  constructor() {
    // The event-loop lag histogram samples with a timer: prom-client's default of every 10 ms woke an idle
    // gateway 100 times a second (about a third of its idle CPU); every 100 ms still catches a stall of 50 ms
    // or more half the time, and every stall of 100 ms or more.
    collectDefaultMetrics({
      register: this.registry,
      prefix: 'gatehouse_',
      eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS,
    });
  }

  /** The cross-process bus's observer (ADR 0025): lag, drops, reconnects and messages counted here. */
  busObserver(): {
    lag(seconds: number): void;
    dropped(reason: string): void;
    reconnected(): void;
    sent(): void;
    received(): void;
  } {
    return {
      lag: (seconds) => this.busLag.observe(seconds),
      dropped: (reason) => this.busDropped.inc({ reason }),
      reconnected: () => this.busReconnects.inc(),
      sent: () => this.busMessages.inc({ direction: 'sent' }),
      received: () => this.busMessages.inc({ direction: 'received' }),
    };
  }

  /** Counts each HTTP answer: API requests by method, route and status; the dashboard's files apart (ADR 0021). */
  responseCounter(
    isDashboardRoute: (route: string) => boolean,
  ): (method: string, route: string, status: number) => void {
    return (method, route, status) =>
      isDashboardRoute(route)
        ? this.dashboardRequests.inc({ status: String(status) })
        : this.requests.inc({ method, route, status: String(status) });
  }

  /** The message path's observers: each turn's duration by status, and idempotent replays. */
  /** Counts the store's commits (their batches' latency) and statements: `gatehouse_store_*`. */
  watchStore(store: {
    writer: { observe(observer: (seconds: number) => void): void };
    observeStatements(observer: () => void): void;
  }): void {
    store.writer.observe((seconds) => this.storeBatch.observe(seconds));
    store.observeStatements(() => this.storeStatements.inc());
  }

  turnObserver(): { onOutcome(status: string, ms: number): void; onReplay(): void } {
    return {
      onOutcome: (status, ms) => this.turnDuration.observe({ status }, ms / 1000),
      onReplay: () => this.idempotencyReplays.inc(),
    };
  }

  /** Registers the gauges, each read at scrape time from the part that owns it (once, when the parts exist). */
  gauge(gauges: {
    queueDepth: () => number;
    turnsRunning: () => number;
    waiters: () => number;
    idempotencyRecords: () => number;
    wsClients: () => number;
  }): void {
    const gauge = (name: string, help: string, read: () => number) =>
      new Gauge({
        name,
        help,
        registers: [this.registry],
        collect() {
          this.set(read());
        },
      });
    gauge('gatehouse_turn_queue_depth', 'Turn jobs waiting to run', gauges.queueDepth);
    gauge('gatehouse_turns_running', 'Turns running in this process', gauges.turnsRunning);
    gauge('gatehouse_waiters', 'Requests waiting for a turn outcome', gauges.waiters);
    gauge('gatehouse_idempotency_records', 'Unexpired idempotency records (estimate)', gauges.idempotencyRecords);
    gauge('gatehouse_ws_clients', 'Open WebSocket clients', gauges.wsClients);
  }

  /**
   * Registers `gatehouse_sse_streams` (once): the SSE responses of the API server open now (message and
   * turn streams, the logs follow, the OpenAI, Responses and A2A streams), read at scrape time. Unlabelled:
   * the server keeps one count for all of them.
   */
  sseGauge(openStreams: () => number): void {
    new Gauge({
      name: 'gatehouse_sse_streams',
      help: 'Open SSE streams',
      registers: [this.registry],
      collect() {
        this.set(openStreams());
      },
    });
  }

  /**
   * Registers the load gauges of `limits.overload` (once), read at scrape time from its last sample: the
   * memory measure and its watermark (none without one), the event loop's delay, and whether the process
   * sheds new work.
   */
  loadGauges(load: {
    measure: string;
    memoryBytes: () => number;
    watermarkBytes: number | null;
    eventLoopDelayMs: () => number;
    shedding: () => boolean;
  }): void {
    const labels = { measure: load.measure };
    new Gauge({
      name: 'gatehouse_memory_bytes',
      help: 'The memory measure load shedding compares with its watermark (rss or heap), at its last sample',
      labelNames: ['measure'] as const,
      registers: [this.registry],
      collect() {
        this.set(labels, load.memoryBytes());
      },
    });
    const watermark = load.watermarkBytes;
    if (watermark !== null) {
      new Gauge({
        name: 'gatehouse_memory_watermark_bytes',
        help: 'Above this much memory (the measure) new work is refused',
        labelNames: ['measure'] as const,
        registers: [this.registry],
      }).set(labels, watermark);
    }
    new Gauge({
      name: 'gatehouse_event_loop_delay_seconds',
      help: "How late the event loop ran load shedding's last sample",
      registers: [this.registry],
      collect() {
        this.set(load.eventLoopDelayMs() / 1000);
      },
    });
    new Gauge({
      name: 'gatehouse_shedding',
      help: '1 while new work is refused because the process is over a limit (memory watermark, event-loop delay)',
      registers: [this.registry],
      collect() {
        this.set(load.shedding() ? 1 : 0);
      },
    });
  }

  /** The exposition text. */
  render(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
