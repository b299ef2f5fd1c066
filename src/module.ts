import type { RouteDef } from './http/route.js';
import type { HttpApp } from './http/server.js';
import type { AgentTool } from './runtime/index.js';

/**
 * When a part of the gateway stops during shutdown (DECISIONS §12), in this
 * order: stop creating work, let the running turns end, wait for the work
 * that waited on them, close the edges (channels, then the HTTP server),
 * close the backends (bus, probes, audit, search, cross-process counts, the
 * store last), then the logs and the instance claim.
 */
export const SHUTDOWN_PHASES = ['intake', 'turns', 'drain', 'edges', 'backends', 'logs'] as const;

/** One phase of the shutdown (see SHUTDOWN_PHASES). */
export type ShutdownPhase = (typeof SHUTDOWN_PHASES)[number];

/**
 * A capability as the composition root installs it (ADR 0036): its routes,
 * its agent tools, what it mounts on the HTTP app outside the route table,
 * how it starts once the app is built, and what it does in each phase of the
 * shutdown. `gateway.ts` assembles a list of these; adding a capability is
 * its own folder and one line of that list.
 */
export interface GatewayModule {
  /** For logs and errors. */
  readonly name: string;
  /** Its API routes (each declares its permission and rate group). */
  readonly routes?: readonly RouteDef[];
  /** Tools it gives the agents. */
  readonly tools?: readonly AgentTool[];
  /** Registers what lives on the HTTP app outside the route table (WebSocket, signed platform endpoints, files). */
  mount?(app: HttpApp): Promise<void> | void;
  /** Starts its background work, in list order, after the message path started. */
  start?(): Promise<void> | void;
  /** Its part of each shutdown phase, run in list order within the phase; `graceMs` bounds the running work. */
  readonly stop?: Partial<Record<ShutdownPhase, (graceMs: number) => Promise<void> | void>>;
}

/** The routes of every module, in list order. */
export function routesOf(modules: readonly GatewayModule[]): RouteDef[] {
  return modules.flatMap((module) => module.routes ?? []);
}

/** The agent tools of every module, in list order. */
export function toolsOf(modules: readonly GatewayModule[]): AgentTool[] {
  return modules.flatMap((module) => module.tools ?? []);
}

/** Mounts, then starts, every module in list order. */
export async function startModules(modules: readonly GatewayModule[], app: HttpApp): Promise<void> {
  for (const module of modules) await module.mount?.(app);
  for (const module of modules) await module.start?.();
}

/** Runs the shutdown: every phase in order, each module's part of it in list order. */
export async function stopModules(modules: readonly GatewayModule[], graceMs: number): Promise<void> {
  for (const phase of SHUTDOWN_PHASES) {
    for (const module of modules) await module.stop?.[phase]?.(graceMs);
  }
}

/** Refuses a start once the modules are built and none has started: stops every one, then throws `err`. */
export async function refuseModules(modules: readonly GatewayModule[], err: Error): Promise<never> {
  await stopModules(modules, 0);
  throw err;
}
