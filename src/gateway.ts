import { analyticsRoutes } from './analytics/index.js';
import { channelRoutes, createBuiltInChannels, WEBHOOK_IDEMPOTENCY_CACHE } from './channels/index.js';
import { secretValues } from './config/config.redact.js';
import { cronRoutes, presentCronRun } from './cron/index.js';
import { docsRoutes } from './docs/index.js';
import { EventBus, publishWrites } from './events/index.js';
import { healthRoutes } from './health/index.js';
import type { RouteDef } from './http/route.js';
import { buildHttpServer } from './http/server.js';
import { systemClock } from './lib/clock.js';
import { createIdGenerator } from './lib/ids.js';
import { packageVersion } from './lib/version.js';
import { KnowledgeService, knowledgeRoutes, knowledgeTools } from './knowledge/index.js';
import { createLogPipeline, logRoutes } from './logs/index.js';
import { MemoryService, memoryRoutes, memoryTools } from './memory/index.js';
import { GatewayMetrics, metricsRoutes } from './metrics/index.js';
import { createPairingService, pairingRoutes } from './pairing/index.js';
import { createProvider, ToolRegistry } from './runtime/index.js';
import { CronScheduler } from './scheduler/index.js';
import { createSearchEngine } from './search/index.js';
import { createTokenScrubber } from './security/audit.js';
import { createIdentityPolicy } from './security/identity.js';
import { createSecurity, prepareAdminToken } from './security/security.js';
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
import { openStore } from './store/index.js';
import { presentTask, TaskRunner, TaskService, taskRoutes, taskTools } from './tasks/index.js';
import { createMessagePath, messageRoutes } from './turns/index.js';
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
  const store = await openStore({ driver: config.storage.driver, dataDir: config.data_dir, url: config.storage.url });
  const security = createSecurity({ config, clock, logger, adminToken: admin.token, scrub });
  const { audit, guard } = security;
  settings.onChange(rateLimitListener(security.rateLimits));
  const pairing = createPairingService({ store, clock, auth, audit });
  const identity = createIdentityPolicy({ auth, isPaired: (p, u) => pairing.isPaired(p, u), audit });

  // The agent's resources, each with its tools.
  const bus = new EventBus();
  logs.connectBus(bus);
  const provider = options.provider ?? createProvider(config.provider);
  const tools = new ToolRegistry();
  const skills = createSkillsService({
    store,
    clock,
    ids,
    onChange: (event, skill) => bus.publish('skills', event, presentSkill(skill)),
  });
  const search = createSearchEngine({ store, embeddings: config.embeddings, logger });
  const memory = new MemoryService({ store, clock, ids, search });
  const knowledge = new KnowledgeService({ store, clock, ids, search });

  // The message path: every entry point below goes through its door.
  const metrics = new GatewayMetrics();
  store.writer.observe((seconds) => metrics.storeBatch.observe(seconds));
  const messages = createMessagePath({
    config,
    store,
    clock,
    ids,
    logger,
    provider,
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
    maxQueued: options.limits?.maxQueued,
  });
  settings.onChange(agentListener((live) => messages.reconfigure(live)));
  messages.tap((event) => {
    if (bus.hasListeners('turns'))
      bus.publish('turns', event.type, { event_id: event.eventId, seq: event.seq, ...event.data });
  });

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
      pingStore: () => store.ping(),
      isDraining,
      provider: () => `${provider.type}:${provider.model}`,
      providerIsEcho: () => provider.type === 'echo',
      channels: () => channels.states(),
      wsClients: () => websocket.clientCount(),
      sessionCounts: () => sessions.counts(),
    }),
    ...publishWrites(sessionRoutes({ service: sessions, messages, replyTimeoutMs }), bus, 'sessions'),
    ...messageRoutes(messages),
    ...messages.routes(),
    ...pairingRoutes({ service: pairing, auth }),
    ...publishWrites(cronRoutes({ store, clock, ids, runner: cron }), bus, 'cron'),
    ...channelRoutes(channels),
    ...logRoutes(logs),
    ...settingsRoutes({ service: settings, logger }),
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
    ...knowledgeRoutes({ service: knowledge }),
    ...metricsRoutes(metrics),
    ...docsRoutes({
      routes: () => routes,
      apiPrefix: config.gateway.api_prefix,
      version: packageVersion(),
      rateLimited: config.security.profile !== 'minimal',
    }),
    ...(options.extraRoutes ?? []),
  ];
  const app = buildHttpServer({
    config,
    routes,
    guard,
    logger,
    isDraining,
    onResponse: (method, route, status) => metrics.requests.inc({ method, route, status: String(status) }),
  });
  await websocket.register(app);

  await messages.start();
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
    () => audit.close(),
    () => search.close(),
    () => store.close(),
    () => logger.info({ source: 'lifecycle' }, 'shutdown complete'),
    () => logger.flush(),
    () => (options.logs ? undefined : logs.close()),
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
  });
  return gateway;
}
