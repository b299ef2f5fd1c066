import { analyticsRoutes } from './analytics/index.js';
import { channelRoutes, createBuiltInChannels, WEBHOOK_IDEMPOTENCY_CACHE } from './channels/index.js';
import { addTelegramChannel, registerTelegramWebhook } from './channels/index.js';
import { addSlackChannel, registerSlackEvents } from './channels/index.js';
import { secretValues } from './config/config.redact.js';
import { cronRoutes, presentCronRun } from './cron/index.js';
import { isDashboardRoute, registerDashboardRoutes } from './dashboard/index.js';
import { asyncApiRoutes, docsRoutes } from './docs/index.js';
import { EventBus, openClusterBus, turnsTopicEvent } from './events/index.js';
import { createGuard } from './http/guard.js';
import { publishWrites } from './http/publish-writes.js';
import { healthRoutes, ProviderHealth } from './health/index.js';
import type { RouteDef } from './http/route.js';
import { buildHttpServer } from './http/server.js';
import { systemClock } from './lib/clock.js';
import { createIdGenerator } from './lib/ids.js';
import { ensurePrivateDirSync } from './lib/private-files.js';
import { packageVersion } from './lib/version.js';
import { KnowledgeService, knowledgeRoutes, knowledgeTools } from './knowledge/index.js';
import { createLogPipeline, logRoutes } from './logs/index.js';
import { MemoryService, memoryRoutes, memoryTools, presentMemory } from './memory/index.js';
import { GatewayMetrics, metricsRoutes } from './metrics/index.js';
import { openAiRoutes } from './openai/index.js';
import { createPairingService, pairingRoutes } from './pairing/index.js';
import { createProvider, ToolRegistry } from './runtime/index.js';
import { CronScheduler } from './scheduler/index.js';
import { createSearchEngine } from './search/index.js';
import { createTokenScrubber } from './security/audit.js';
import { createIdentityPolicy } from './security/identity.js';
import { createSecurity, prepareAdminToken } from './security/security.js';
import { ClusterCounts } from './security/cluster-counts.js';
import { securityRoutes } from './self-audit/index.js';
import { SessionService, sessionRoutes } from './sessions/index.js';
import {
  agentListener,
  logLevelListener,
  rateLimitListener,
  SettingsService,
  settingsRoutes,
  taskConcurrencyListener,
} from './settings/index.js';
import {
  createSkillsService,
  presentSkill,
  skillCommands,
  skillRoutes,
  skillTools,
  skillsSystemContext,
} from './skills/index.js';
import { claimInstance, openStore } from './store/index.js';
import { instanceIdOf, instanceLockEvents } from './cluster/index.js';
import { presentTask, TaskRunner, TaskService, taskRoutes, taskTools } from './tasks/index.js';
import { createMessagePath, messageRoutes, sessionMessageRoutes } from './turns/index.js';
import { internalsOf, type Gateway, type GatewayOptions } from './gateway.handle.js';

export { gatewayInternals, type Gateway, type GatewayInternals, type GatewayOptions } from './gateway.handle.js';

/**
 * The composition root: picks adapters and wires services in dependency
 * order. Policy lives in the capabilities; nothing else constructs stores,
 * providers or servers.
 */
export async function createGateway(options: GatewayOptions): Promise<Gateway> {
  const { config } = options;
  const clock = options.clock ?? systemClock;
  const ids = options.ids ?? createIdGenerator(clock);
  const { auth } = config.gateway;
  let draining = false;
  const isDraining = () => draining;

  // The data dir first, so everything created in it is private from the start (ADR 0013).
  ensurePrivateDirSync(config.data_dir);
  // This gateway's name among those sharing the database (ADR 0029): stable across restarts on this machine.
  const instanceId = instanceIdOf({
    configured: config.cluster.instance_id,
    dataDir: config.data_dir,
    port: config.gateway.port,
  });
  // Held until the process ends, by a lock the OS or the database frees at death (ADR 0035).
  const instance = await claimInstance({
    driver: config.storage.driver,
    dataDir: config.data_dir,
    url: config.storage.url,
    id: instanceId,
    events: instanceLockEvents(instanceId, () => logger),
  });

  // Security and operations: the admin token, secrets kept out of every output, logs, audit, guard.
  const admin = prepareAdminToken(config);
  const scrub = createTokenScrubber([...secretValues(config), ...(admin.token ? [admin.token] : [])]);
  const logs =
    options.logs ??
    createLogPipeline({
      dataDir: config.data_dir,
      level: config.logs.level,
      bufferEntries: config.logs.buffer_entries,
      scrub,
      clock,
    });
  const logger = options.logger ?? logs.logger;
  const settings = new SettingsService({
    config,
    configPath: options.configPath ?? null,
    fileObject: options.fileObject ?? {},
    onListenerError: (err) => logger.error({ source: 'config', err }, 'applying a live configuration change failed'),
  });
  settings.onChange(logLevelListener(logger));
  const store = await openStore({
    driver: config.storage.driver,
    dataDir: config.data_dir,
    url: config.storage.url,
    ...(options.storeFaults ? { faults: options.storeFaults } : {}),
    onConnectionError: (err) =>
      logger.warn({ source: 'store', err: err.message }, 'database connection dropped; the pool opens a new one'),
  });
  // The cross-process bus (ADR 0025): a configured one that cannot be reached stops the start.
  const metrics = new GatewayMetrics();
  const cluster = await openClusterBus({
    config: config.bus,
    instanceId,
    version: packageVersion(),
    clock,
    logger,
    observer: {
      lag: (seconds) => metrics.busLag.observe(seconds),
      dropped: (reason) => metrics.busDropped.inc({ reason }),
      reconnected: () => metrics.busReconnects.inc(),
      sent: () => metrics.busMessages.inc({ direction: 'sent' }),
      received: () => metrics.busMessages.inc({ direction: 'received' }),
    },
  }).catch(async (err: unknown) => {
    logger.error({ source: 'bus', err: (err as Error).message }, 'start-up refused: the bus cannot be used');
    await store.close();
    if (!options.logs) await logs.close();
    await instance.release();
    throw err;
  });
  // Rate limits and the webhook's max_pending count across the gateways sharing the database (ADR 0028).
  const clusterCounts = store.shared
    ? new ClusterCounts({ store, instanceId, clock, logger, staleMs: config.cluster.takeover_after_ms })
    : null;
  const security = createSecurity({
    config,
    clock,
    logger,
    adminToken: admin.token,
    scrub,
    ...(clusterCounts ? { sharedCounts: clusterCounts.windows } : {}),
  });
  const { audit } = security;
  const guard = createGuard({ config, clock, ...security });
  settings.onChange(rateLimitListener(security.rateLimits));
  const pairing = createPairingService({ store, clock, auth, audit });
  const identity = createIdentityPolicy({ auth, isPaired: (p, u) => pairing.isPaired(p, u), audit });

  // The agent's resources, each with its tools.
  const bus = new EventBus(10_000, cluster.shared ? (event) => cluster.publishFeed(event) : null);
  logs.connectBus(bus);
  settings.onChange((_next, changed) => bus.publish('config', 'updated', { changed }));
  const provider = options.provider ?? createProvider(config.provider);
  // Health: the provider's reachability, probed at most once a minute, and its calls' outcomes (ADR 0024).
  const providerHealth = new ProviderHealth({ provider, clock, logger });
  const startedAt = clock.now();
  const tools = new ToolRegistry();
  const skills = createSkillsService({
    store,
    clock,
    ids,
    onChange: (event, skill) => bus.publish('skills', event, presentSkill(skill)),
  });
  const search = createSearchEngine({ store, embeddings: config.embeddings, logger });
  const memory = new MemoryService({
    store,
    clock,
    ids,
    search,
    onChange: (event, entry) =>
      bus.publish('memory', event, 'content' in entry ? { ...presentMemory(entry) } : { id: entry.id }),
  });
  const knowledge = new KnowledgeService({ store, clock, ids, search });

  // The message path: every entry point below goes through its door.
  store.writer.observe((seconds) => metrics.storeBatch.observe(seconds));
  const messages = createMessagePath({
    config,
    store,
    clock,
    ids,
    logger,
    provider: providerHealth.track(provider),
    tools,
    checkIdentity: identity.check,
    idempotencyCacheSizes: { webhook: WEBHOOK_IDEMPOTENCY_CACHE },
    systemContext: [skillsSystemContext(skills)],
    commands: skillCommands(skills, { isAdminUser: identity.isAdminUser }),
    onOutcome: (status, ms) => metrics.turnDuration.observe({ status }, ms / 1000),
    onReplay: () => metrics.idempotencyReplays.inc(),
    onAccepted: (sessionKey, eventId) => {
      if (bus.hasListeners('sessions')) bus.publish('sessions', 'updated', { id: sessionKey, event_id: eventId });
    },
    idempotencyCeiling: options.limits?.idempotencyCeiling,
    owner: instanceId,
    busConnected: () => cluster.shared && cluster.connected(),
    onSessionFree: (sessionKey) => cluster.publishSessionFree(sessionKey),
    interruptElsewhere: (eventId, reason) => cluster.publishInterrupt(eventId, reason),
  });
  settings.onChange(agentListener((live) => messages.reconfigure(live)));
  // Turn events reach other processes once stored, as turn events (their `turns` topic is fed from those).
  messages.tap((event) => {
    if (bus.hasLocalListeners('turns')) bus.deliver(turnsTopicEvent(event));
  });
  if (cluster.shared) {
    messages.relay((event) => cluster.publishTurn(event));
    cluster.receive({
      feed: (event) => bus.deliver(event),
      turn: (event) => {
        if (messages.deliverRemote(event) && bus.hasLocalListeners('turns')) bus.deliver(turnsTopicEvent(event));
      },
      wake: (eventId) => messages.wake(eventId),
      session: (sessionKey) => messages.sessionFree(sessionKey),
      interrupt: (eventId, reason) => void messages.interruptHere(eventId, reason),
    });
  }

  // Work the gateway creates itself: tasks and cron, handed the door.
  const taskService = new TaskService({
    store,
    clock,
    ids,
    interruptTurn: (eventId, reason) => messages.interrupt(eventId, reason),
    onChange: (event, task) => bus.publish('tasks', event, presentTask(task)),
  });
  const taskRunner = new TaskRunner({
    service: taskService,
    store,
    clock,
    logger,
    messages,
    owner: messages.owner,
    maxConcurrent: config.tasks.max_concurrent,
  });
  bus.subscribe(['tasks'], () => taskRunner.notify()); // every task change may be work for the runner
  settings.onChange(taskConcurrencyListener((max) => taskRunner.setMaxConcurrent(max)));
  const agentTools = [
    ...memoryTools(memory),
    ...knowledgeTools(knowledge),
    ...skillTools(skills),
    ...taskTools(taskService),
    ...(options.tools ?? []),
  ];
  for (const tool of agentTools) tools.register(tool);
  const cron = new CronScheduler({
    store,
    clock,
    ids,
    intake: messages,
    waiters: { wait: (eventId, timeoutMs, signal) => messages.waitFor(eventId, timeoutMs, signal) },
    profile: config.security.profile,
    logger,
    onRun: (run) => bus.publish('cron', 'run', presentCronRun(run)),
  });

  // Channels: the WebSocket on the API server, the webhook on its own.
  const {
    registry: channels,
    websocket,
    webhook,
  } = createBuiltInChannels({
    config,
    guard,
    rateLimiter: security.rateLimiter,
    audit,
    messages,
    bus,
    checkIdentity: identity.check,
    clock,
    logger,
    isDraining,
  });
  if (clusterCounts) webhook?.sharePending((name, local) => clusterCounts.gauge(name, local));
  const telegram = await addTelegramChannel({ config, messages, pairing, registry: channels, store, clock, logger }); // DECISIONS §16
  const slack = await addSlackChannel({ config, messages, pairing, registry: channels, store, clock, logger }); // DECISIONS §16
  metrics.gauge({
    queueDepth: messages.gauges.queued,
    turnsRunning: messages.gauges.running,
    waiters: messages.gauges.waiters,
    idempotencyRecords: messages.gauges.idempotencyRecords,
    wsClients: () => websocket.clientCount(),
  });

  // The API.
  const sessions = new SessionService({ store, clock, ids });
  const replyTimeoutMs = Math.min(600, config.provider.timeout_seconds * (config.agent.max_tool_iterations + 1)) * 1000;
  const routes: RouteDef[] = [
    ...healthRoutes({
      pingStore: async () => {
        await store.ping();
        await store.checkWrites(); // a full disk still answers the ping (ADR 0014)
      },
      isDraining,
      provider: () => `${provider.type}:${provider.model}`,
      providerHealth: () => providerHealth.check(),
      channels: () => channels.states(),
      bus: () => cluster.health(),
      instanceId: () => cluster.instanceId,
      peers: () => (cluster.shared ? cluster.peerList() : null),
      wsClients: () => websocket.clientCount(),
      sessionCounts: () => sessions.counts(),
      version: packageVersion,
      uptimeSeconds: () => (clock.now() - startedAt) / 1000,
    }),
    ...publishWrites(sessionRoutes({ service: sessions }), bus.publisher('sessions')),
    ...publishWrites(sessionMessageRoutes({ sessions, messages, replyTimeoutMs }), bus.publisher('sessions')),
    ...messageRoutes(messages),
    ...openAiRoutes({ messages, ids, clock, replyTimeoutMs }),
    ...messages.routes(),
    ...pairingRoutes({ service: pairing, auth }),
    ...publishWrites(cronRoutes({ store, clock, ids, runner: cron }), bus.publisher('cron')),
    ...channelRoutes(channels),
    ...logRoutes(logs),
    ...settingsRoutes({ service: settings, logger }),
    ...securityRoutes({ config: () => settings.current() }),
    ...analyticsRoutes({
      store,
      clock,
      extraCounts: async (since) => ({
        tasks_completed: await taskService.countCompletedSince(since),
        skills_used: await skills.countUsedSince(since),
      }),
    }),
    ...skillRoutes({ service: skills }),
    ...taskRoutes({ service: taskService }),
    ...memoryRoutes({ service: memory }),
    ...publishWrites(knowledgeRoutes({ service: knowledge }), bus.publisher('knowledge')),
    ...metricsRoutes(metrics),
    ...docsRoutes({
      routes: () => routes,
      apiPrefix: config.gateway.api_prefix,
      version: packageVersion(),
      rateLimited: config.security.profile !== 'minimal',
      tokenHeader: config.gateway.auth.token_header,
    }),
    ...asyncApiRoutes({
      apiPrefix: config.gateway.api_prefix,
      version: packageVersion(),
      tokenHeader: config.gateway.auth.token_header,
    }),
    ...(options.extraRoutes ?? []),
  ];
  const app = buildHttpServer({
    ...(options.ssePingMs !== undefined ? { ssePingMs: options.ssePingMs } : {}),
    config,
    routes,
    guard,
    logger,
    isDraining,
    // Dashboard files are not API traffic: counted apart (ADR 0021).
    onResponse: (method, route, status) =>
      isDashboardRoute(route)
        ? metrics.dashboardRequests.inc({ status: String(status) })
        : metrics.requests.inc({ method, route, status: String(status) }),
  });
  await websocket.register(app);
  // Telegram's webhook mode (/telegram/<bot id>, secret header): on the webhook's port too, else the API's.
  if (telegram?.webhook && webhook) webhook.mount((server) => registerTelegramWebhook(server, telegram));
  else if (telegram?.webhook) await registerTelegramWebhook(app, telegram);
  // Slack's Events API, signed, outside the token pipeline: on the webhook's port, else the API's (DECISIONS §16).
  if (slack?.events && webhook) webhook.mount((server) => registerSlackEvents(server, slack.events!));
  else if (slack?.events) await registerSlackEvents(app, slack.events);
  registerDashboardRoutes(app, { guard, logger, ...(options.dashboardRoot ? { root: options.dashboardRoot } : {}) });

  await messages.start();
  clusterCounts?.start(); // after the instance is registered: counts of unregistered instances are not read
  await taskRunner.start();
  await channels.startAll();
  cron.start();

  /** Shutdown, in order (DECISIONS §12): each step closes one part. */
  let taskRuns: Promise<void> = Promise.resolve();
  const shutdownSteps = (graceMs: number): Array<() => Promise<void> | void> => [
    () => cron.close(),
    () => void (taskRuns = taskRunner.close()), // stop claiming; runs end with their turns
    () => messages.shutdown(graceMs),
    () => taskRuns,
    () => channels.stopAll(),
    () => app.close(),
    () => cluster.close(),
    () => providerHealth.close(),
    () => audit.close(),
    () => search.close(),
    () => clusterCounts?.close(),
    () => store.close(),
    () => logger.info({ source: 'lifecycle' }, 'shutdown complete'),
    () => logger.flush(),
    () => (options.logs ? undefined : logs.close()),
    () => instance.release(),
  ];
  let shutdownPromise: Promise<void> | null = null;
  const gateway: Gateway = {
    config,
    app,
    logger,
    firstStart: { adminToken: admin.generated ? admin.token : null, adminTokenPath: admin.token ? admin.path : null },
    listen: () => app.listen({ host: config.gateway.host, port: config.gateway.port }),
    shutdown(graceMs = 60_000) {
      shutdownPromise ??= (async () => {
        draining = true;
        for (const step of shutdownSteps(graceMs)) await step();
      })();
      return shutdownPromise;
    },
  };
  // prettier-ignore
  internalsOf.set(gateway, {
    store, guard, audit, routes, messages, provider, bus, metrics, cron, settings, channels, pairing, websocket,
    webhook, tasks: { service: taskService, runner: taskRunner }, isDraining, beginDrain: () => void (draining = true),
    cluster,
  });
  return gateway;
}
