import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

/** Delayed callbacks (injected so tests can drive them); the returned function cancels. */
export interface McpTimers {
  after(ms: number, fn: () => void): () => void;
}

/** `setTimeout`, unreferenced: nothing here keeps the process alive. */
export const mcpTimers: McpTimers = {
  after(ms, fn) {
    const timer = setTimeout(fn, ms);
    timer.unref();
    return () => clearTimeout(timer);
  },
};

/** How the child is started and watched. */
export interface StdioChildOptions {
  command: string;
  args: readonly string[];
  /** The child's whole environment. */
  env: Record<string, string>;
  cwd: string | null;
  /** A line on stdout longer than this ends the child: a server cannot make the gateway buffer without bound. */
  maxLineBytes: number;
  /** Checks one parsed stdout line as a JSON-RPC message (the SDK's schema); throws when it is not one. */
  parseMessage: (value: unknown) => JSONRPCMessage;
  /** One line of the child's stderr (already cut to a bounded length). */
  onStderrLine: (line: string) => void;
  /** A stdout line that is not a JSON-RPC message (cut), ignored otherwise. */
  onGarbage: (line: string) => void;
  /** How long the child gets after SIGTERM before SIGKILL. */
  killGraceMs: number;
  timers: McpTimers;
}

/** How long stdout is still read after the child exited, at most. */
const STDOUT_DRAIN_MS = 250;

/** Characters of one stderr or garbage line kept. */
export const MAX_STDERR_LINE_CHARS = 2_000;

/** Splits a byte stream into lines, at most `maxBytes` bytes each (beyond: `onOverflow`). */
class LineSplitter {
  private parts: Buffer[] = [];
  private size = 0;
  constructor(
    private readonly maxBytes: number,
    private readonly onLine: (line: string) => void,
    private readonly onOverflow: () => void,
  ) {}

  push(chunk: Buffer): void {
    let start = 0;
    for (;;) {
      const newline = chunk.indexOf(0x0a, start);
      if (newline === -1) break;
      const piece = chunk.subarray(start, newline);
      if (this.size + piece.length > this.maxBytes) return this.overflow();
      const line = Buffer.concat([...this.parts, piece]).toString('utf8');
      this.parts = [];
      this.size = 0;
      this.onLine(line.endsWith('\r') ? line.slice(0, -1) : line);
      start = newline + 1;
    }
    const rest = chunk.subarray(start);
    if (rest.length === 0) return;
    if (this.size + rest.length > this.maxBytes) return this.overflow();
    this.parts.push(rest);
    this.size += rest.length;
  }

  private overflow(): void {
    this.parts = [];
    this.size = 0;
    this.onOverflow();
  }
}

/**
 * The client side of a stdio MCP server, in place of the SDK's `StdioClientTransport`: that one adds
 * `getDefaultEnvironment()` (HOME, LOGNAME, SHELL, TERM, USER) to any `env`, sends stderr to the gateway's own
 * stderr unless piped, and buffers stdout up to a fixed size. Here the child gets exactly `env`, its stderr
 * goes to `onStderrLine`, a line over `maxLineBytes` ends it, and `close()` sends SIGTERM, then SIGKILL after
 * `killGraceMs`, and resolves once the child has exited.
 */
export class StdioChildTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  private child: ChildProcessWithoutNullStreams | null = null;
  private exited: Promise<void> = Promise.resolve();
  private closed = false;

  constructor(private readonly options: StdioChildOptions) {}

  /** The child's process id, while it runs. */
  get pid(): number | null {
    return this.child?.pid ?? null;
  }

  start(): Promise<void> {
    const { options } = this;
    return new Promise((resolve, reject) => {
      const child = spawn(options.command, [...options.args], {
        env: options.env,
        cwd: options.cwd ?? undefined,
        stdio: ['pipe', 'pipe', 'pipe'],
        shell: false,
        windowsHide: true,
      });
      this.child = child;
      let exitedResolve: () => void = () => undefined;
      this.exited = new Promise((done) => (exitedResolve = done));
      let started = false;
      child.once('spawn', () => {
        started = true;
        resolve();
      });
      child.once('error', (error) => {
        // A spawn failure (ENOENT, EACCES): no process, no exit event.
        if (!started) {
          this.child = null;
          exitedResolve();
          reject(error);
          this.finish();
        } else {
          this.onerror?.(error);
        }
      });
      child.once('exit', () => {
        exitedResolve();
        this.child = null;
        // What the child wrote just before it exited is still read: the end comes when stdout ends, or soon
        // after the exit if another process (one it started) still holds the pipe.
        if (child.stdout.readableEnded || child.stdout.destroyed) return this.finish();
        const drained = setTimeout(() => {
          child.stdout.destroy();
          this.finish();
        }, STDOUT_DRAIN_MS);
        drained.unref();
        child.stdout.once('close', () => {
          clearTimeout(drained);
          this.finish();
        });
      });
      const stdout = new LineSplitter(
        options.maxLineBytes,
        (line) => this.readLine(line),
        () => {
          this.onerror?.(new Error(`the server wrote a line over ${options.maxLineBytes} bytes on stdout`));
          void this.close();
        },
      );
      child.stdout.on('data', (chunk: Buffer) => stdout.push(chunk));
      const stderr = new LineSplitter(
        64 * 1024,
        (line) => options.onStderrLine(line.slice(0, MAX_STDERR_LINE_CHARS)),
        () => options.onStderrLine('[a stderr line over 64 KiB was left out]'),
      );
      child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk));
      // Errors of the pipes (EPIPE after the child died) end with the exit; they must not be unhandled.
      for (const stream of [child.stdin, child.stdout, child.stderr]) stream.on('error', () => undefined);
    });
  }

  private readLine(line: string): void {
    if (line.trim() === '') return;
    let message: JSONRPCMessage;
    try {
      message = this.options.parseMessage(JSON.parse(line));
    } catch {
      this.options.onGarbage(line.slice(0, MAX_STDERR_LINE_CHARS));
      return;
    }
    this.onmessage?.(message);
  }

  private finish(): void {
    if (this.closed) return;
    this.closed = true;
    this.onclose?.();
  }

  send(message: JSONRPCMessage): Promise<void> {
    const child = this.child;
    if (!child || child.stdin.destroyed) return Promise.reject(new Error('the server process is not running'));
    return new Promise((resolve, reject) => {
      child.stdin.write(`${JSON.stringify(message)}\n`, (error) => (error ? reject(error) : resolve()));
    });
  }

  /** Ends the child: stdin closed and SIGTERM, SIGKILL after the grace; resolves once it has exited. */
  async close(): Promise<void> {
    const child = this.child;
    if (child) {
      child.stdin.end();
      child.kill('SIGTERM');
      const cancel = this.options.timers.after(this.options.killGraceMs, () => {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      });
      await this.exited;
      cancel();
    }
    this.finish();
  }
}
