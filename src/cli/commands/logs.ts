import { createParser, type EventSourceMessage } from 'eventsource-parser';
import type { Command } from 'commander';
import type { LogLevel } from '../../config/config.schema.js';
import { CliError, EXIT, type CliIo } from '../io.js';
import { intOption, withClientOptions } from '../options.js';
import { callApi, fetchApi, resolveTarget, type ClientOptions } from '../target.js';
import { style, type Tone } from '../terminal.js';

/**
 * The levels `--level` takes (the configuration's `logs.level` values, in order). Written out here so that the
 * command does not load the configuration's schema; the record's type makes a level added there a type error.
 */
const LEVELS: Record<LogLevel, true> = { debug: true, info: true, warning: true, error: true };
const logLevels = Object.keys(LEVELS) as LogLevel[];

/** One log entry on the wire (spec: Logs). */
interface LogEntry {
  timestamp: string;
  level: string;
  source: string;
  message: string;
  metadata: Record<string, unknown>;
}

interface LogsOptions extends ClientOptions {
  follow?: boolean;
  level?: string;
  source?: string;
  limit: string;
  json?: boolean;
}

const LEVEL_TONES: Record<string, Tone> = { debug: 'gray', info: 'cyan', warning: 'yellow', error: 'red' };

/** One line: `12:01:02.345 INFO  http  request completed  status=200 …` (local time), coloured on a terminal. */
export function formatLogLine(entry: LogEntry, colour: boolean): string {
  const time = new Date(entry.timestamp);
  const clock = Number.isNaN(time.getTime())
    ? entry.timestamp
    : `${time.toLocaleTimeString('en-GB', { hour12: false })}.${String(time.getMilliseconds()).padStart(3, '0')}`;
  const level = entry.level.toUpperCase().padEnd(5);
  const fields = Object.entries(entry.metadata ?? {})
    .map(([key, value]) => `${key}=${typeof value === 'string' ? value : JSON.stringify(value)}`)
    .join(' ');
  return (
    `${style(colour, 'dim', clock)} ${style(colour, LEVEL_TONES[entry.level] ?? 'bold', level)} ` +
    `${style(colour, 'magenta', entry.source)}  ${entry.message}${fields ? `  ${style(colour, 'dim', fields)}` : ''}`
  );
}

/** `gatehouse logs [-f] [--level] [--source]`: recent entries oldest first, then (with -f) new ones as they come. */
export function registerLogs(program: Command, io: CliIo): void {
  const command = withClientOptions(
    program
      .command('logs')
      .description("the gateway's recent log entries (needs an admin token); -f follows new ones")
      .option('-f, --follow', 'keep printing new entries until Ctrl-C')
      .option('--level <level>', `minimum level: ${logLevels.join(', ')}`)
      .option('--source <source>', 'only entries of this source (http, audit, lifecycle, turns, …)')
      .option('-n, --limit <n>', 'how many recent entries to print first (1..1000)', '50')
      .option('--json', 'print one JSON object per line'),
  );
  command.action(async (options: LogsOptions) => {
    if (options.level !== undefined && !(logLevels as readonly string[]).includes(options.level)) {
      command.error(`error: --level must be one of ${logLevels.join(', ')}`, { exitCode: EXIT.usage });
    }
    const limit = intOption(command, 'limit', options.limit, 1, 1000);
    const target = await resolveTarget(io, options);
    const print = (entry: LogEntry): void =>
      io.out(`${options.json ? JSON.stringify(entry) : formatLogLine(entry, io.stdoutIsTTY)}\n`);
    const filter = { level: options.level, source: options.source };
    const page = await callApi<{ items: LogEntry[] }>(target, '/logs', { query: { ...filter, limit } });
    for (const entry of [...page.items].reverse()) print(entry);
    if (page.items.length === 0 && !options.json) {
      // Said on stderr: stdout stays the entries alone, for a pipe.
      const which = [
        options.level ? `at level ${options.level} or above` : '',
        options.source ? `from source ${options.source}` : '',
      ].filter(Boolean);
      io.err(
        `No log entries${which.length ? ` ${which.join(' ')}` : ''} in the gateway's recent buffer` +
          `${options.follow ? '; waiting for new ones (Ctrl-C ends)' : ''}.\n`,
      );
    }
    if (!options.follow) return;

    const stop = new AbortController();
    process.once('SIGINT', () => stop.abort());
    let response: Response;
    try {
      response = await fetchApi(target, '/logs', {
        query: { ...filter, follow: true },
        headers: { accept: 'text/event-stream' },
        signal: stop.signal,
        timeoutMs: 2 ** 31 - 1,
      });
    } catch (err) {
      if (stop.signal.aborted) return; // Ctrl-C while the stream was being opened: a normal end
      throw err;
    }
    if (!response.ok || !response.body) throw new CliError(`cannot follow the logs: HTTP ${response.status}`);
    const parser = createParser({
      onEvent: (message: EventSourceMessage) => {
        if (message.event !== 'log') return;
        try {
          print(JSON.parse(message.data) as LogEntry);
        } catch {
          /* not an entry */
        }
      },
    });
    const decoder = new TextDecoder();
    try {
      for await (const chunk of response.body) parser.feed(decoder.decode(chunk as Uint8Array, { stream: true }));
    } catch (err) {
      if (!stop.signal.aborted) throw new CliError(`the log stream broke off: ${(err as Error).message}`);
      return;
    }
    if (!stop.signal.aborted) throw new CliError('the gateway closed the log stream (stopped or restarting)');
  });
}
