import type { Clock } from '../../lib/clock.js';
import type { Logger } from '../../lib/logger.js';
import type * as ConnectionModule from './mcp-connection.js';
import type { ConnectionTarget, McpConnection } from './mcp-connection.js';
import type { McpTimers } from './mcp-stdio.js';
import { offeredTools, presentResult, type McpServerConfig, type OfferedTool } from './mcp-tools.js';

/** A server's state (DECISIONS §19): connecting, ready (its tools offered), failed (retried with backoff), stopped. */
export type McpServerState = 'connecting' | 'ready' | 'failed' | 'stopped';

/** The restart policy; every field has a default. */
export interface McpBackoffPolicy {
  /** First delay after a failure. */
  initialMs: number;
  /** Delays double up to this. */
  maxMs: number;
  /** A connection ready for this long resets the delay to `initialMs` when it ends. */
  stableMs: number;
  /** The initialize answer is awaited at most min(timeout_seconds, this). */
  maxInitMs: number;
  /**
   * When set, how long the initialize answer (and the tool listing) is awaited instead of
   * min(timeout_seconds, maxInitMs): for embedding and tests whose calls must end far sooner than a child
   * takes to start on a loaded machine.
   */
  initMs: number | null;
  /** SIGTERM to SIGKILL. */
  killGraceMs: number;
}

export const DEFAULT_MCP_BACKOFF: McpBackoffPolicy = {
  initialMs: 1_000,
  maxMs: 60_000,
  stableMs: 60_000,
  maxInitMs: 30_000,
  initMs: null,
  killGraceMs: 2_000,
};

/** What a supervisor is handed. */
export interface SupervisorDeps {
  name: string;
  server: McpServerConfig;
  maxOutputBytes: number;
  /** The key `maxOutputBytes` comes from, named in the note of a cut result; default `mcp.max_output_bytes`. */
  maxOutputKey?: string;
  /** How to reach the server (the child's environment, the outbound policy). */
  target: (
    hooks: Pick<Extract<ConnectionTarget, { transport: 'stdio' }>, 'onStderrLine' | 'onGarbage'>,
  ) => ConnectionTarget;
  /** The connection module, imported on first use. */
  connector: () => Promise<typeof ConnectionModule>;
  logger: Logger;
  clock: Clock;
  timers: McpTimers;
  policy: McpBackoffPolicy;
  /** Removes configured secrets from a text. */
  scrub: (text: string) => string;
  /** Told each time the offered tools or the state change. */
  onChange: () => void;
}

/** A refusal of the outbound policy: never retried until a restart. */
function isBlocked(error: unknown): boolean {
  return error instanceof Error && error.name === 'BlockedTargetError';
}

/** Characters of an error message kept in `last_error`. */
const MAX_ERROR_CHARS = 500;

/**
 * One configured MCP server, supervised: connected at start, restarted with backoff (1 s doubling to 60 s,
 * reset after a stable minute) when the child dies, the connection fails or initialize is not answered in
 * time, stopped at close. Its tools are listed after initialize and on `notifications/tools/list_changed`.
 */
export class McpServerSupervisor {
  state: McpServerState = 'stopped';
  lastError: string | null = null;
  restarts = 0;
  connectedAt: number | null = null;
  tools: OfferedTool[] = [];

  private connection: McpConnection | null = null;
  /** Bumped by every attempt, restart and close: callbacks of an older attempt are ignored. */
  private generation = 0;
  private failures = 0;
  private cancelRetry: (() => void) | null = null;
  private attempt: AbortController | null = null;
  private attemptDone: Promise<void> = Promise.resolve();
  private closed = false;
  private refreshing: Promise<void> | null = null;
  private refreshAgain = false;
  private stderrWindow = { start: 0, lines: 0, dropped: 0 };

  constructor(private readonly deps: SupervisorDeps) {}

  get name(): string {
    return this.deps.name;
  }

  /** Min(timeout_seconds, maxInitMs), unless the policy sets `initMs`. */
  private get initTimeoutMs(): number {
    return this.deps.policy.initMs ?? Math.min(this.deps.server.timeout_seconds * 1000, this.deps.policy.maxInitMs);
  }

  start(): void {
    if (this.closed) return;
    this.connect();
  }

  /** Restarts now (POST /mcp/servers/{name}/restart): ends the connection, forgets the backoff, connects. */
  async restart(): Promise<void> {
    if (this.closed) return;
    this.failures = 0;
    await this.disconnect();
    if (this.closed) return;
    this.restarts++;
    this.connect();
  }

  /** Stops the server for good: a connect in progress is aborted, the child ended; no timer is left. */
  async close(): Promise<void> {
    this.closed = true;
    await this.disconnect();
    this.setState('stopped');
  }

  private async disconnect(): Promise<void> {
    this.generation++;
    this.cancelRetry?.();
    this.cancelRetry = null;
    this.attempt?.abort();
    const connection = this.connection;
    this.connection = null;
    this.tools = [];
    this.connectedAt = null;
    await this.attemptDone;
    await connection?.close();
  }

  private connect(): void {
    const generation = ++this.generation;
    const attempt = new AbortController();
    this.attempt = attempt;
    this.setState('connecting');
    this.attemptDone = this.runAttempt(generation, attempt.signal).finally(() => {
      if (this.attempt === attempt) this.attempt = null;
    });
  }

  private async runAttempt(generation: number, signal: AbortSignal): Promise<void> {
    const current = () => generation === this.generation && !this.closed;
    let connection: McpConnection | null = null;
    try {
      const module = await this.deps.connector();
      const target = this.deps.target({
        onStderrLine: (line) => this.logStderr(line),
        onGarbage: (line) => this.logStderr(`[not JSON-RPC on stdout] ${line}`),
      });
      connection = await module.openConnection(
        target,
        {
          onLost: (reason) => this.lost(generation, reason),
          onToolsChanged: () => this.refreshTools(generation),
          onError: (error) =>
            this.deps.logger.debug(
              { source: 'mcp', server: this.name, err: this.clean(error) },
              'MCP server transport error',
            ),
        },
        { initTimeoutMs: this.initTimeoutMs, timers: this.deps.timers, signal },
      );
      if (!current()) {
        await connection.close();
        return;
      }
      this.connection = connection;
      await this.listTools(connection);
      if (!current()) return;
      this.connectedAt = this.deps.clock.now();
      this.setState('ready');
      this.deps.logger.info({ source: 'mcp', server: this.name, tools: this.tools.length }, 'MCP server ready');
    } catch (error) {
      if (!current()) {
        await connection?.close();
        return;
      }
      this.connection = null;
      await connection?.close();
      this.failed(this.describe(error), !isBlocked(error));
    }
  }

  /** Lists the tools and keeps those offered; a skipped one is logged. */
  private async listTools(connection: McpConnection): Promise<void> {
    const { tools, more } = await connection.listTools(this.initTimeoutMs);
    const { offered, skipped } = offeredTools(this.name, this.deps.server, tools);
    for (const { tool, reason } of skipped) {
      this.deps.logger.warn(
        { source: 'mcp', server: this.name, tool: this.deps.scrub(tool) },
        `MCP tool skipped: ${reason}`,
      );
    }
    if (more) {
      this.deps.logger.warn(
        { source: 'mcp', server: this.name },
        'MCP server lists more than 256 tools; the rest are left out',
      );
    }
    this.tools = offered;
    this.deps.onChange();
  }

  /** notifications/tools/list_changed: lists again (one listing at a time, once more if announced meanwhile). */
  private refreshTools(generation: number): void {
    if (generation !== this.generation || this.closed) return;
    if (this.refreshing) {
      this.refreshAgain = true;
      return;
    }
    const connection = this.connection;
    if (!connection) return;
    this.refreshing = (async () => {
      do {
        this.refreshAgain = false;
        try {
          await this.listTools(connection);
        } catch (error) {
          this.deps.logger.warn(
            { source: 'mcp', server: this.name, err: this.describe(error) },
            'refreshing the MCP tool list failed',
          );
        }
      } while (this.refreshAgain && generation === this.generation && !this.closed);
    })().finally(() => {
      this.refreshing = null;
    });
  }

  /** The connection ended by itself (the child died, the transport closed). */
  private lost(generation: number, reason: string): void {
    if (generation !== this.generation || this.closed) return;
    const wasReady = this.state === 'ready';
    const stable =
      wasReady && this.connectedAt !== null && this.deps.clock.now() - this.connectedAt >= this.deps.policy.stableMs;
    if (stable) this.failures = 0;
    const connection = this.connection;
    this.connection = null;
    this.tools = [];
    this.connectedAt = null;
    void connection?.close();
    // An attempt still connecting fails on its own (its connect rejects) and schedules the retry.
    if (wasReady) this.failed(reason, true);
  }

  /** A call that failed in a way that means the connection is gone (an http request that could not be sent). */
  private connectionBroke(reason: string): void {
    this.lost(this.generation, reason);
  }

  private failed(reason: string, retry: boolean): void {
    this.lastError = reason;
    this.setState('failed');
    this.generation++;
    if (!retry) {
      this.deps.logger.error({ source: 'mcp', server: this.name, err: reason }, 'MCP server refused; not retried');
      return;
    }
    const delay = Math.min(this.deps.policy.initialMs * 2 ** this.failures, this.deps.policy.maxMs);
    this.failures++;
    this.deps.logger.warn(
      { source: 'mcp', server: this.name, err: reason, retry_in_ms: delay },
      'MCP server failed; restarting after a delay',
    );
    this.cancelRetry = this.deps.timers.after(delay, () => {
      this.cancelRetry = null;
      if (this.closed || this.state !== 'failed') return;
      this.restarts++;
      this.connect();
    });
  }

  private setState(state: McpServerState): void {
    if (this.state === state) return;
    this.state = state;
    this.deps.onChange();
  }

  /**
   * Runs one tool (a call of `mcp__<server>__<tool>`): at once a tool error when the server is not ready;
   * ended at timeout_seconds, or with the turn; the result presented as untrusted content.
   */
  async call(tool: string, args: Record<string, unknown>, signal: AbortSignal): Promise<unknown> {
    const connection = this.connection;
    if (this.state !== 'ready' || !connection) {
      const why = this.lastError ? `; last error: ${this.lastError}` : '';
      throw new Error(`MCP server ${this.name} is not ready (${this.state}${why})`);
    }
    const timeoutMs = this.deps.server.timeout_seconds * 1000;
    const module = await this.deps.connector();
    try {
      const result = await connection.callTool(tool, args, timeoutMs, signal);
      return presentResult(this.name, tool, result, this.deps.maxOutputBytes, this.deps.maxOutputKey);
    } catch (error) {
      if (error instanceof Error && error.name === 'McpToolError') throw error;
      const failure = module.callFailure(error, signal);
      if (failure.kind === 'transport' && this.deps.server.transport === 'http' && this.connection === connection) {
        this.connectionBroke(this.clean(failure.message));
      }
      const text =
        failure.kind === 'timeout'
          ? `timed out after ${this.deps.server.timeout_seconds} s (timeout_seconds)`
          : this.clean(failure.message);
      throw new Error(`MCP server ${this.name}, tool ${tool}: ${text}`);
    }
  }

  /** stderr lines into the log: scrubbed, at most 20 a second (then one line says how many were dropped). */
  private logStderr(line: string): void {
    const now = this.deps.clock.now();
    const window = this.stderrWindow;
    if (now - window.start >= 1000) {
      if (window.dropped > 0) {
        this.deps.logger.warn(
          { source: 'mcp', server: this.name, dropped: window.dropped },
          'MCP server stderr lines dropped (over 20 a second)',
        );
      }
      this.stderrWindow = { start: now, lines: 0, dropped: 0 };
    }
    if (this.stderrWindow.lines >= 20) {
      this.stderrWindow.dropped++;
      return;
    }
    this.stderrWindow.lines++;
    this.deps.logger.info({ source: 'mcp', server: this.name, stderr: this.deps.scrub(line) }, 'MCP server stderr');
  }

  private clean(error: unknown): string {
    const text = error instanceof Error ? error.message : String(error);
    const scrubbed = this.deps.scrub(text);
    return scrubbed.length > MAX_ERROR_CHARS ? `${scrubbed.slice(0, MAX_ERROR_CHARS)}…` : scrubbed;
  }

  private describe(error: unknown): string {
    if (error instanceof Error && (error as NodeJS.ErrnoException).code === 'ENOENT' && this.deps.server.command) {
      return this.clean(`cannot start ${this.deps.server.command}: not found`);
    }
    return this.clean(error);
  }
}
