import { openAgents } from './agents/index.js';
import { analyticsModule } from './analytics/index.js';
import { channelsModule, openChannels, WEBHOOK_IDEMPOTENCY_CACHE } from './channels/index.js';
import { instanceIdOf, instanceLockEvents } from './cluster/index.js';
import { secretValues } from './config/config.redact.js';
import { toolNameIssues, toolNamesCheck } from './config/config.references.js';
import { openMcp } from './mcp/index.js';
import { a2aModule } from './a2a/index.js';
import { ConfigError } from './config/config.load.js';
import { cronModule } from './cron/index.js';
import { dashboardModule, isDashboardRoute } from './dashboard/index.js';
import { docsModule } from './docs/index.js';
import { EventBus, openClusterBus } from './events/index.js';
import { healthModule, ProviderHealth } from './health/index.js';
import { createGuard } from './http/guard.js';
import type { RouteDef } from './http/route.js';
import { buildHttpServer } from './http/server.js';
import { knowledgeModule } from './knowledge/index.js';
import { systemClock } from './lib/clock.js';
import { createIdGenerator } from './lib/ids.js';
import { ensurePrivateDirSync } from './lib/private-files.js';
import { packageVersion } from './lib/version.js';
import { createLogPipeline, logRoutes } from './logs/index.js';
import { memoryModule } from './memory/index.js';
import { GatewayMetrics, metricsModule } from './metrics/index.js';
import { refuseModules, routesOf, startModules, stopModules, toolsOf, type GatewayModule } from './module.js';
import { openAiModule } from './openai/index.js';
import { openOverload } from './overload/index.js';
import { createPairingService, pairingModule } from './pairing/index.js';
import { responsesModule } from './responses/index.js';
import { createProvider, ToolRegistry } from './runtime/index.js';
import { openScheduler } from './scheduler/index.js';
import { createSearchEngine } from './search/index.js';
import { createTokenScrubber } from './security/audit.js';
import { ClusterCounts } from './security/cluster-counts.js';
import { createIdentityPolicy } from './security/identity.js';
import { createSecurity, prepareAdminToken } from './security/security.js';
import { selfAuditModule } from './self-audit/index.js';
import { SessionService, sessionsModule } from './sessions/index.js';
import { agentListener, logLevelListener, rateLimitListener, SettingsService } from './settings/index.js';
import { settingsModule, taskConcurrencyListener } from './settings/index.js';
import { openSkills, skillCommands, skillsModule, skillsSystemContext } from './skills/index.js';
import { claimInstance, openStore, storageOf } from './store/index.js';
import { openSubscriptions } from './subscriptions/index.js';
import { openTasks, tasksModule } from './tasks/index.js';
import { openTracing } from './tracing/index.js';
import { connectTurns, createMessagePath, pathHooks, turnsModule } from './turns/index.js';
import { internalsOf, refuseStart, type Gateway, type GatewayOptions } from './gateway.handle.js';

export { gatewayInternals, type Gateway, type GatewayInternals, type GatewayOptions } from './gateway.handle.js';

/**
 * The composition root (ADR 0036): claims the instance, builds the shared
 * parts (logs, settings, store, bus, security, the message path) in
 * dependency order, then installs the capabilities as a list of modules:
 * their routes and tools, what they mount, their start in list order and
 * their part of each shutdown phase (`module.ts`). Policy lives in the
 * capabilities; nothing else constructs stores, providers or servers.
 */
export async function createGateway(options: GatewayOptions): Promise<Gateway> {
  const { config } = options;
  const clock = options.clock ?? systemClock;
  const ids = options.ids ?? createIdGenerator(clock);
  let draining = false;
  const isDraining = () => draining;

  // The data dir first, so everything created in it is private from the start (ADR 0013).
  ensurePrivateDirSync(config.data_dir);
  // This gateway's name (ADR 0029), held until the process ends by a lock a death frees (ADR 0035).
  const instanceId = instanceIdOf({
    configured: config.cluster.instance_id,
    dataDir: config.data_dir,
    port: config.gateway.port,
  });
  const claim = { ...storageOf(config), id: instanceId };
  const instance = await claimInstance({ ...claim, events: instanceLockEvents(instanceId, () => logger) });

  // Operations: the admin token, secrets kept out of every output, logs, the running configuration.
  const admin = prepareAdminToken(config);
  const scrub = createTokenScrubber([...secretValues(config), ...(admin.token ? [admin.token] : [])]);
  const logSettings = { dataDir: config.data_dir, level: config.logs.level, bufferEntries: config.logs.buffer_entries };
  const logs = options.logs ?? createLogPipeline({ ...logSettings, scrub, clock });
  const logger = options.logger ?? logs.logger;
  const tools = new ToolRegistry();
  const settings = new SettingsService({
    config,
    configPath: options.configPath ?? null,
    fileObject: options.fileObject ?? {},
    onListenerError: (err) => logger.error({ source: 'config', err }, 'applying a live configuration change failed'),
    check: toolNamesCheck(tools),
  });
  settings.onChange(logLevelListener(logger));
  const faults = options.storeFaults ? { faults: options.storeFaults } : {};
  const dropped = (err: Error) => logger.warn({ source: 'store', err: err.message }, 'database connection dropped');
  const store = await openStore({ ...storageOf(config), ...faults, onConnectionError: dropped });
  // The cross-process bus (ADR 0025): a configured one that cannot be reached stops the start.
  const metrics = new GatewayMetrics();
  const overload = openOverload({ config, logger, metrics, probes: options.limits?.overload }); // shedding, ADR 0043
  const busOptions = { config: config.bus, instanceId, version: packageVersion(), clock, logger };
  const refused = { logger, store, logs: options.logs ? null : logs, instance };
  const cluster = await openClusterBus({ ...busOptions, observer: metrics.busObserver() }).catch(refuseStart(refused));

  // Who may pass: rate limits and max_pending count across the gateways sharing the database (ADR 0028).
  const counting = { store, instanceId, clock, logger, staleMs: config.cluster.takeover_after_ms };
  const clusterCounts = store.shared ? new ClusterCounts(counting) : null;
  const sharedCounts = clusterCounts ? { sharedCounts: clusterCounts.windows } : {};
  const security = createSecurity({ config, clock, logger, adminToken: admin.token, scrub, ...sharedCounts });
  const { audit, rateLimiter } = security;
  const guard = createGuard({ config, clock, ...security, shed: overload.pressure });
  settings.onChange(rateLimitListener(security.rateLimits));
  const { auth } = config.gateway;
  const pairing = createPairingService({ store, clock, auth, audit });
  const identity = createIdentityPolicy({ auth, isPaired: (p, u) => pairing.isPaired(p, u), audit });

  // The live feed, the model provider (its health probed at most once a minute, ADR 0024) and the agent's tools.
  const bus = new EventBus(10_000, cluster.shared ? cluster : null);
  logs.connectBus(bus);
  settings.onChange((_next, changed) => bus.publish('config', 'updated', { changed }));
  const provider = options.provider ?? createProvider(config.provider);
  const providerHealth = new ProviderHealth({ provider, clock, logger });
  const skills = openSkills({ store, clock, ids, bus });
  const search = createSearchEngine({ store, embeddings: config.embeddings, logger });

  // The agents (DECISIONS §17), then the message path: every entry point goes through its door.
  const systemContext = [skillsSystemContext(skills)];
  const tracked = providerHealth.track(provider);
  const onChange = settings.onChange.bind(settings);
  const agents = openAgents({ config, store, provider: tracked, tools, systemContext, onChange });
  metrics.watchStore(store);
  const tracing = await openTracing(config, { instanceId, version: packageVersion(), logger }); // SDK only when on
  const subscriptions = openSubscriptions({ config, store, clock, ids, logger, instanceId, metrics, tracing, bus });
  const messages = createMessagePath({
    config,
    store,
    clock,
    ids,
    logger,
    provider: tracked,
    tools,
    checkIdentity: identity.check,
    idempotencyCacheSizes: { webhook: WEBHOOK_IDEMPOTENCY_CACHE },
    systemContext,
    agents: agents.path,
    commands: skillCommands(skills, { isAdminUser: identity.isAdminUser }),
    ...metrics.turnObserver(),
    ...pathHooks(cluster, bus),
    idempotencyCeiling: options.limits?.idempotencyCeiling,
    owner: instanceId,
    tracer: tracing.tracer,
    outbox: subscriptions.outbox,
    shedder: overload,
  });
  settings.onChange(agentListener((live) => messages.reconfigure(live)));
  connectTurns(messages, bus, cluster);

  // Work the gateway creates itself (tasks, cron) and the channels, each handed the door.
  const tasks = openTasks({ store, clock, ids, logger, bus, messages, maxConcurrent: config.tasks.max_concurrent });
  settings.onChange(taskConcurrencyListener((max) => tasks.runner.setMaxConcurrent(max)));
  const cron = openScheduler({ store, clock, ids, logger, messages, bus, profile: config.security.profile });
  const gauges = clusterCounts ? clusterCounts.gauge.bind(clusterCounts) : null;
  const edge = { config, guard, rateLimiter, audit, messages, bus, checkIdentity: identity.check };
  const channels = await openChannels({ ...edge, pairing, store, clock, logger, isDraining, gauges });
  const sessions = new SessionService({ store, clock, ids, outbox: subscriptions.outbox });
  const replyTimeoutMs = Math.min(600, config.provider.timeout_seconds * (config.agent.max_tool_iterations + 1)) * 1000;
  const health = { store, isDraining, provider, providerHealth, channels: channels.registry, cluster, clock };
  const resources = { store, clock, ids, search, bus };
  const mcp = openMcp({ config, logger, clock, tools, messages, sessions, resources, replyTimeoutMs, agents });

  // The capabilities, in the order their routes are listed, they start and they stop within a shutdown phase.
  const modules: GatewayModule[] = [
    turnsModule({ messages, sessions, replyTimeoutMs, bus }), // starts first: recovers this instance's work
    { name: 'cluster-counts', start: () => clusterCounts?.start() }, // counts once the instance is registered
    healthModule({ ...health, websocket: channels.websocket, sessions, mcp: mcp.health, overload }),
    sessionsModule(sessions, bus, agents.sessionOrigin),
    agents.module,
    openAiModule({ messages, ids, clock, replyTimeoutMs, agents: agents.roster }),
    responsesModule({ messages, sessions, ids, replyTimeoutMs, agents: agents.roster }),
    mcp.module,
    a2aModule({ config, logger, ids, messages, sessions, agents, guard, replyTimeoutMs }),
    subscriptions.module,
    pairingModule(pairing, config),
    cronModule({ store, clock, ids, bus, scheduler: cron }),
    channelsModule(channels),
    { name: 'logs', routes: logRoutes(logs) }, // infrastructure with routes of its own
    settingsModule(settings, logger),
    selfAuditModule(() => settings.current()),
    analyticsModule({ store, clock, tasks: tasks.service, skills }),
    skillsModule(skills),
    tasksModule(tasks),
    memoryModule(resources),
    knowledgeModule(resources),
    metricsModule(metrics, { messages, websocket: channels.websocket }),
    docsModule(config, () => routes),
    { name: 'extensions', routes: options.extraRoutes ?? [], tools: options.tools ?? [] },
    dashboardModule({ guard, logger, root: options.dashboardRoot }),
    { name: 'search', stop: { backends: () => search.close() } },
    tracing.module, // flushes the last turns' spans, then shuts the SDK down
  ];
  const routes: RouteDef[] = routesOf(modules);
  for (const tool of toolsOf(modules)) tools.register(tool);
  const app = buildHttpServer({
    ...(options.ssePingMs !== undefined ? { ssePingMs: options.ssePingMs } : {}),
    config,
    routes,
    guard,
    logger,
    isDraining,
    onResponse: metrics.responseCounter(isDashboardRoute),
  });

  // What the shared parts do in each shutdown phase (DECISIONS §12), after the capabilities' parts of it.
  modules.push(
    { name: 'http', stop: { edges: () => app.close() } },
    { name: 'bus', stop: { backends: () => cluster.close() } },
    { name: 'provider-health', stop: { backends: () => providerHealth.close() } },
    { name: 'audit', stop: { backends: () => audit.close() } },
    { name: 'cluster-counts', stop: { backends: () => clusterCounts?.close() } },
    { name: 'store', stop: { backends: () => store.close() } },
    { name: 'lifecycle', stop: { logs: () => logger.info({ source: 'lifecycle' }, 'shutdown complete') } },
    { name: 'logger', stop: { logs: () => logger.flush() } },
    { name: 'logs', stop: { logs: () => (options.logs ? undefined : logs.close()) } },
    { name: 'instance', stop: { logs: () => instance.release() } },
  );
  const toolIssues = toolNameIssues(config, tools.names()); // agents name tools the modules gave (DECISIONS §17)
  if (toolIssues.length > 0) await refuseModules(modules, new ConfigError(toolIssues));
  await startModules(modules, app);

  let shutdownPromise: Promise<void> | null = null;
  const gateway: Gateway = {
    config,
    app,
    logger,
    firstStart: { adminToken: admin.generated ? admin.token : null, adminTokenPath: admin.token ? admin.path : null },
    listen: () => app.listen({ host: config.gateway.host, port: config.gateway.port }),
    shutdown(graceMs = 60_000) {
      draining = true;
      shutdownPromise ??= stopModules(modules, graceMs);
      return shutdownPromise;
    },
  };
  // prettier-ignore
  internalsOf.set(gateway, {
    store, guard, audit, routes, messages, provider, bus, metrics, cron, settings, channels: channels.registry,
    pairing, websocket: channels.websocket, webhook: channels.webhook, tasks, isDraining,
    beginDrain: () => void (draining = true), cluster, tracing,
  });
  return gateway;
}
