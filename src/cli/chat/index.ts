import type { Command } from 'commander';
import { CliError, EXIT, type CliIo } from '../io.js';
import { withClientOptions } from '../options.js';
import { resolveTarget, type ClientOptions } from '../target.js';
import { isSessionKey } from './chat.commands.js';

interface ChatCommandOptions extends ClientOptions {
  session?: string;
  user?: string;
}

/**
 * `gatehouse chat`: the terminal chat client over the WebSocket (DECISIONS §8, §15). Exit codes: 0 when the user
 * quits, 1 when the gateway cannot be reached or refuses the token (or, with piped input, a message failed),
 * 2 for usage errors.
 */
export function registerChat(program: Command, io: CliIo): void {
  const command = withClientOptions(
    program
      .command('chat')
      .description('terminal chat with the agent over the WebSocket: streamed replies, tool calls, approvals')
      .option('-s, --session <key>', 'continue in this session (a key "gateway:…"; default: a new session)')
      .option('--user <id>', "the chat identity's user id (default: the token's fingerprint)"),
  );
  command.addHelpText(
    'after',
    '\nIn the chat, /help lists the commands (/approve, /deny, /new, /status, /sessions, /switch, /interrupt,\n' +
      '/quit). A line ending in \\ continues the message; Ctrl-C interrupts the running turn; Ctrl-D quits.\n' +
      'Replies resume after a dropped connection without repeating what was shown. With piped input, each\n' +
      'line is sent in turn and the chat ends after the last reply.',
  );
  command.action(async (options: ChatCommandOptions) => {
    if (options.session !== undefined && !isSessionKey(options.session)) {
      command.error(
        `error: --session must be a session key starting with "gateway:", not ${JSON.stringify(options.session)}`,
        {
          exitCode: EXIT.usage,
        },
      );
    }
    if (options.user !== undefined && (options.user.trim() === '' || options.user.length > 200)) {
      command.error('error: --user must be 1 to 200 characters', { exitCode: EXIT.usage });
    }
    const target = await resolveTarget(io, options);
    const { ChatClient } = await import('./chat.client.js');
    const client = new ChatClient({
      target,
      sessionKey: options.session ?? null,
      ...(options.user !== undefined ? { userId: options.user } : {}),
      colour: io.stdoutIsTTY,
      streams: { input: process.stdin, output: process.stdout },
    });
    const code = await client.run();
    if (code !== EXIT.ok) throw new CliError('some messages failed (see above)');
  });
}
