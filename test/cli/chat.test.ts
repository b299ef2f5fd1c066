/**
 * `gatehouse chat` end to end: the BUILT binary (`node dist/src/main.js chat`) in a pseudo-terminal driven by tmux
 * (a private server per test: `-L`), against a real gateway process on the fake OpenAI-compatible provider. Keys are
 * sent with `send-keys`, the screen is read with `capture-pane`, and every wait polls the screen (or the API) against
 * a deadline. The gateway is watched through its API: the ledger, the skills, what the model was asked.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { killAllNow, ROOT } from '../../bench/processes.js';
import { deferred } from '../helpers/deferred.js';
import {
  chatRequests,
  contentText,
  echoReply,
  lastOfRole,
  lastUserText,
  startFakeOpenAI,
  type FakeOpenAI,
} from '../helpers/fake-openai.js';
import {
  ADMIN_TOKEN,
  call,
  e2eHome,
  pollUntil,
  removeE2EHomes,
  startGateway,
  stopGateway,
  type E2EHome,
  type Running,
  type TurnView,
} from '../e2e/helpers.js';

const MAIN = join(ROOT, 'dist', 'src', 'main.js');
/** Bound of every wait on the screen. */
const SCREEN_TIMEOUT_MS = 10_000;
/** The reconnection backoff doubles up to 8 s (±20 %): once the gateway is back, the next attempt may be 10 s away. */
const RECONNECT_TIMEOUT_MS = 20_000;
const ROOMY = { security: { rate_limits: { read: 100_000, write: 100_000 } } };

let paneCounter = 0;

/** A tmux server of its own (`-L`) running one command in a 120×40 pane. */
class Pane {
  /** The server's socket file, removed with the server. */
  private socketPath: string | null = null;

  private constructor(readonly socket: string) {}

  /** Starts `command` (run by `sh -c`) in the repository root with `env` added. */
  static start(command: string, env: Record<string, string>): Pane {
    const pane = new Pane(`gh-chat-${process.pid}-${++paneCounter}`);
    const envArgs = Object.entries(env).flatMap(([name, value]) => ['-e', `${name}=${value}`]);
    pane.tmux('new-session', '-d', '-x', '120', '-y', '40', '-c', ROOT, ...envArgs, command);
    pane.tmux('set-option', '-g', 'history-limit', '10000');
    pane.socketPath = pane.tmux('display-message', '-p', '#{socket_path}').trim() || null;
    return pane;
  }

  tmux(...args: string[]): string {
    const result = spawnSync('tmux', ['-L', this.socket, '-f', '/dev/null', ...args], { encoding: 'utf8' });
    if (result.status !== 0) throw new Error(`tmux ${args[0]} failed: ${result.stderr}`);
    return result.stdout;
  }

  /** Everything the pane shows and scrolled past, wrapped lines joined. */
  text(): string {
    return this.tmux('capture-pane', '-p', '-J', '-S', '-');
  }

  /** Types `text` literally (no Enter). */
  type(text: string): void {
    this.tmux('send-keys', '-l', text);
  }

  /** Presses keys by tmux name: `Enter`, `C-c`, `C-d`, `Up`. */
  press(...keys: string[]): void {
    this.tmux('send-keys', ...keys);
  }

  /** Types a line and presses Enter. */
  line(text: string): void {
    this.type(text);
    this.press('Enter');
  }

  /** Pastes `text` as a terminal does with bracketed paste on (the markers only when the program asked for them). */
  paste(text: string): void {
    this.tmux('set-buffer', '-b', 'chat-test', text);
    this.tmux('paste-buffer', '-p', '-d', '-b', 'chat-test');
  }

  /** Waits until the screen matches `pattern` (or `count` times); returns the screen. */
  async waitFor(pattern: RegExp, what: string, count = 1, timeoutMs = SCREEN_TIMEOUT_MS): Promise<string> {
    let last = '';
    await pollUntil(
      what,
      async () => {
        last = this.text();
        return occurrences(last, pattern) >= count ? true : undefined;
      },
      { timeoutMs, intervalMs: 100, describe: () => `the screen was:\n${last}` },
    );
    return last;
  }

  kill(): void {
    spawnSync('tmux', ['-L', this.socket, 'kill-server'], { encoding: 'utf8' });
    if (this.socketPath) rmSync(this.socketPath, { force: true });
  }
}

/** How often `pattern` occurs in `text`. */
function occurrences(text: string, pattern: RegExp): number {
  return [
    ...text.matchAll(new RegExp(pattern.source, pattern.flags.includes('g') ? pattern.flags : `${pattern.flags}g`)),
  ].length;
}

/**
 * A TCP relay in front of the gateway: the chat's `--url` stays the same while the gateway behind it restarts on
 * a new port, and a test can cut the connections through it (and refuse new ones for a while).
 */
class Relay {
  private readonly sockets = new Set<Socket>();
  private blocked = false;
  /** The request line of every connection relayed (the WebSocket upgrades). */
  readonly requestLines: string[] = [];

  private constructor(
    private readonly server: Server,
    private targetPort: number,
  ) {
    server.on('connection', (client) => {
      if (this.blocked) {
        client.destroy();
        return;
      }
      const upstream = connect(this.targetPort, '127.0.0.1');
      for (const socket of [client, upstream]) {
        this.sockets.add(socket);
        socket.on('error', () => undefined);
        socket.on('close', () => {
          this.sockets.delete(socket);
          client.destroy();
          upstream.destroy();
        });
      }
      client.once('data', (chunk: Buffer) => this.requestLines.push(chunk.toString('latin1').split('\r\n')[0]!));
      client.pipe(upstream);
      upstream.pipe(client);
    });
  }

  static async start(targetUrl: string): Promise<Relay> {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return new Relay(server, portOf(targetUrl));
  }

  get url(): string {
    const address = this.server.address();
    if (address === null || typeof address === 'string') throw new Error('relay not listening');
    return `http://127.0.0.1:${address.port}`;
  }

  retarget(targetUrl: string): void {
    this.targetPort = portOf(targetUrl);
  }

  /** Cuts every connection; with `block`, refuses new ones until `unblock()`. */
  cut(block = false): void {
    this.blocked = block;
    for (const socket of this.sockets) socket.destroy();
  }

  unblock(): void {
    this.blocked = false;
  }

  async close(): Promise<void> {
    this.cut(true);
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

function portOf(url: string): number {
  return Number(new URL(url).port);
}

/** Runs the chat with piped standard input (never spawnSync: the fake provider lives in this process). */
function runChat(
  args: string[],
  env: Record<string, string>,
  input: string,
): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [MAIN, 'chat', ...args], {
      env: { PATH: process.env.PATH, TZ: 'UTC', ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.on('error', reject);
    child.on('close', (status) => {
      clearTimeout(timer);
      resolve({ status, stdout, stderr });
    });
    child.stdin.end(input);
  });
}

/** A session's turns, newest first (admin). */
async function sessionTurns(url: string, key: string): Promise<TurnView[]> {
  const res = await call<{ items: TurnView[] }>(url, 'GET', `/api/v1/sessions/${encodeURIComponent(key)}/turns`, {
    token: ADMIN_TOKEN,
  });
  expect(res.status).toBe(200);
  return res.body.items;
}

describe('gatehouse chat (the built binary in a terminal)', { timeout: 60_000 }, () => {
  const panes: Pane[] = [];
  const fakes: FakeOpenAI[] = [];
  const relays: Relay[] = [];
  let sessionCounter = 0;

  beforeAll(() => {
    if (!existsSync(join(ROOT, 'dist', 'src', 'cli', 'chat', 'chat.client.js'))) {
      throw new Error('the build is missing or stale: run `npm run build` first');
    }
    if (spawnSync('tmux', ['-V']).status !== 0) throw new Error('tmux is needed for these tests');
  });

  afterEach(async () => {
    for (const pane of panes.splice(0)) pane.kill();
    for (const relay of relays.splice(0)) await relay.close();
    killAllNow();
    const closing = fakes.splice(0);
    await Promise.all(closing.map((fake) => fake.close()));
    removeE2EHomes();
    for (const fake of closing) fake.verify();
  });

  async function gateway(
    extra: Record<string, unknown> = {},
  ): Promise<{ home: E2EHome; gw: Running; fake: FakeOpenAI }> {
    const fake = await startFakeOpenAI();
    fakes.push(fake);
    const home = e2eHome(fake, { ...ROOMY, ...extra });
    return { home, gw: await startGateway(home), fake };
  }

  /** Starts the chat on `url` in a fresh session (its key is returned) and waits for the first prompt. */
  async function chat(url: string, args: string[] = []): Promise<{ pane: Pane; session: string }> {
    const session = `gateway:cli:test-${process.pid}-${++sessionCounter}`;
    const command = ['node', MAIN, 'chat', '--url', url, '--session', session, ...args].join(' ');
    const pane = Pane.start(`${command}; echo "[exit $?]"; sleep 300`, {
      GATEHOUSE_TOKEN: ADMIN_TOKEN,
      TZ: 'UTC',
      LANG: 'C.UTF-8',
    });
    panes.push(pane);
    await pane.waitFor(/^you›\s*$/m, 'the first prompt');
    return { pane, session };
  }

  it('streams a reply; a line ending in \\ and a paste each make one message; /quit exits 0', async () => {
    const { gw, fake } = await gateway();
    fake.always((body) => ({ content: `fake: ${lastUserText(body)}`, chunks: 5 }));
    const { pane, session } = await chat(gw.url);
    expect(pane.text()).toContain(`session ${session}`);

    pane.line('hello there');
    await pane.waitFor(/agent› fake: hello there\n {2}✓ completed/, 'the streamed reply and its status');

    pane.line('first line\\');
    pane.line('second line');
    await pane.waitFor(/✓ completed/, 'the second reply', 2);
    expect(lastUserText(chatRequests(fake).at(-1)!)).toBe('first line\nsecond line');

    pane.paste('pasted one\npasted two');
    pane.press('Enter');
    await pane.waitFor(/✓ completed/, 'the third reply', 3);
    expect(lastUserText(chatRequests(fake).at(-1)!)).toBe('pasted one\npasted two');

    // Each message is one turn, answered once.
    const turns = await sessionTurns(gw.url, session);
    expect(turns.map((t) => t.status)).toEqual(['completed', 'completed', 'completed']);
    expect(chatRequests(fake)).toHaveLength(3);
    expect(occurrences(pane.text(), /fake: hello there/)).toBe(1);

    // Input history: Up brings back the last line.
    pane.press('Up');
    await pane.waitFor(/you› pasted two$/m, 'the last line recalled');
    pane.press('C-c'); // clears the line at the prompt
    await pane.waitFor(/press Ctrl-C again/, 'the hint after Ctrl-C at the prompt');
    pane.line('/quit');
    await pane.waitFor(/\[exit 0\]/, 'the chat to exit 0');
  });

  it('/approve activates a staged skill through the API', async () => {
    const { gw, fake } = await gateway();
    fake.enqueue(
      {
        tool_calls: [
          {
            name: 'propose_skill',
            arguments: { name: 'brew-tea', description: 'How to brew tea', instructions: 'Boil water. Steep 3 min.' },
          },
        ],
      },
      { content: 'I proposed the skill brew-tea.' },
    );
    const { pane } = await chat(gw.url);

    pane.line('learn how to brew tea');
    await pane.waitFor(/⚙ propose_skill/, 'the tool call');
    await pane.waitFor(/↳ propose_skill: .*staged/, 'the tool result');
    await pane.waitFor(/agent› I proposed the skill brew-tea\.\n {2}✓ completed/, 'the reply');
    const staged = await call<{ items: Array<{ id: string; name: string; status: string }> }>(
      gw.url,
      'GET',
      '/api/v1/skills?status=staged',
      { token: ADMIN_TOKEN },
    );
    const skill = staged.body.items.find((s) => s.name === 'brew-tea');
    expect(skill?.status).toBe('staged');

    pane.line('/approve brew-tea');
    await pane.waitFor(new RegExp(`Approved skill brew-tea version 1 \\(${skill!.id}\\): it is active\\.`), 'approval');
    const after = await call<{ status: string }>(gw.url, 'GET', `/api/v1/skills/${skill!.id}`, { token: ADMIN_TOKEN });
    expect(after.body.status).toBe('active');

    pane.line('/approve brew-tea');
    await pane.waitFor(
      /brew-tea version 1 .* is active, not staged: there is nothing to approve\./,
      'a second /approve',
    );
    pane.line('/deny no-such-skill');
    await pane.waitFor(/No skill named no-such-skill\. There are no staged skills\./, '/deny of an unknown skill');
    expect(chatRequests(fake)).toHaveLength(2); // the commands never reached the model
  });

  it('a tool call waiting for approval is approved with y, and another denied with n, one key each', async () => {
    const { gw, fake } = await gateway({ agent: { approval_required: ['memory_save'] } });
    fake.enqueue(
      { tool_calls: [{ name: 'memory_save', arguments: { content: 'The kettle is blue' } }] },
      { content: 'Saved: the kettle is blue.' },
    );
    const { pane, session } = await chat(gw.url);

    pane.line('remember the kettle');
    await pane.waitFor(/approve\? \[y\/n\]\s*$/m, 'the approval question');
    expect(pane.text()).toMatch(/⚙ memory_save \{"content":"The kettle is blue"\}/);
    expect(pane.text()).toMatch(/⏸ approval needed to run memory_save \{"content":"The kettle is blue"\} \(turn evt_/);
    const [paused] = await sessionTurns(gw.url, session);
    expect(paused!.status).toBe('waiting_approval');

    pane.type('y'); // one key, no Enter
    await pane.waitFor(/agent› Saved: the kettle is blue\.\n {2}✓ completed/, 'the rest of the turn');
    const screen = pane.text();
    expect(screen).toMatch(/approve\? \[y\/n\] yes/);
    expect(screen).toMatch(/↳ memory_save: .*"status":"created"/);
    // Following the turn again after the approval replays it from the start: nothing is shown twice.
    expect(occurrences(screen, /⚙ memory_save/)).toBe(1);
    expect(occurrences(screen, /Saved: the kettle is blue\./)).toBe(1);
    const [approved] = await sessionTurns(gw.url, session);
    expect(approved).toMatchObject({ event_id: paused!.event_id, status: 'completed' });

    fake.enqueue(
      { tool_calls: [{ name: 'memory_save', arguments: { content: 'The cups are red' } }] },
      { content: 'Not saved.' },
    );
    pane.line('remember the cups');
    await pane.waitFor(/approve\? \[y\/n\]\s*$/m, 'the second approval question');
    pane.type('n');
    await pane.waitFor(/agent› Not saved\.\n {2}✓ completed/, 'the denied turn to end');
    expect(pane.text()).toMatch(/↳ memory_save: .*denied/);
    const toolMessages = chatRequests(fake)
      .at(-1)!
      .messages!.filter((m) => m.role === 'tool')
      .map((m) => contentText(m.content));
    expect(toolMessages.at(-1)).toContain('denied');
  });

  it("the agent's question is answered at the answer prompt, which resumes the turn", async () => {
    const { gw, fake } = await gateway();
    fake.enqueue(
      { tool_calls: [{ name: 'ask_user', arguments: { question: 'Which kettle, the blue or the red one?' } }] },
      (body) => ({ content: `Going with ${lastOfRole(body, 'tool')}.` }),
    );
    const { pane, session } = await chat(gw.url);

    pane.line('fill the kettle');
    await pane.waitFor(
      /agent› Which kettle, the blue or the red one\?\n^answer›\s*$/m,
      'the question and the answer prompt',
    );
    const [paused] = await sessionTurns(gw.url, session);
    expect(paused!.status).toBe('waiting_clarification');

    pane.line('the blue one');
    await pane.waitFor(/agent› Going with the blue one\.\n {2}✓ completed/, 'the turn resumed by the answer');
    await pane.waitFor(/^you›\s*$/m, 'the usual prompt again');
    const turns = await sessionTurns(gw.url, session);
    expect(turns.find((t) => t.event_id === paused!.event_id)?.status).toBe('completed');
  });

  it('Ctrl-C interrupts a running turn (ledger: interrupted) and the chat goes on', async () => {
    const { gw, fake } = await gateway();
    fake.enqueue({ content: 'Thinking very slowly', stall: true });
    const { pane, session } = await chat(gw.url);

    pane.line('think hard');
    await pane.waitFor(/agent› Thinking very slowly/, 'the stalled reply');
    const [running] = await sessionTurns(gw.url, session);
    expect(running!.status).toBe('running');

    pane.press('C-c');
    await pane.waitFor(/■ interrupted/, 'the interrupted status');
    const [interrupted] = await sessionTurns(gw.url, session);
    expect(interrupted).toMatchObject({ event_id: running!.event_id, status: 'interrupted' });

    fake.always(echoReply);
    pane.line('still there?');
    await pane.waitFor(/agent› fake: still there\?\n {2}✓ completed/, 'the next reply');
    // Ctrl-C twice in a row at the prompt leaves.
    pane.press('C-c');
    pane.press('C-c');
    await pane.waitFor(/\[exit 0\]/, 'the chat to exit 0');
  });

  it('the gateway killed and restarted mid-turn: the chat reconnects, ends the turn and goes on, nothing twice', async () => {
    const { home, gw, fake } = await gateway();
    fake.enqueue(
      { content: 'Looking it up. ', tool_calls: [{ name: 'memory_search', arguments: { query: 'kettle' } }] },
      { hang: true }, // the model's second answer never comes: the turn is running when the gateway dies
    );
    const relay = await Relay.start(gw.url);
    relays.push(relay);
    const { pane, session } = await chat(relay.url);

    pane.line('where is the kettle');
    await pane.waitFor(/↳ memory_search/, 'the tool result');
    await pollUntil('the second model call', async () => (chatRequests(fake).length === 2 ? true : undefined));
    const [running] = await sessionTurns(gw.url, session);
    expect(running!.status).toBe('running');

    expect(await stopGateway(gw, 'SIGKILL')).toBe('SIGKILL');
    await pane.waitFor(/reconnecting in/, 'the drop noticed');
    const second = await startGateway(home);
    relay.retarget(second.url);
    await pane.waitFor(/· reconnected/, 'the reconnection', 1, RECONNECT_TIMEOUT_MS);
    await pane.waitFor(/■ interrupted/, 'the turn ended by the restart');
    const [ended] = await sessionTurns(second.url, session);
    expect(ended).toMatchObject({
      event_id: running!.event_id,
      status: 'interrupted',
      termination_reason: 'process_restart',
    });

    fake.always(echoReply);
    pane.line('are you back');
    await pane.waitFor(/agent› fake: are you back\n {2}✓ completed/, 'the conversation going on');
    const screen = pane.text();
    expect(occurrences(screen, /Looking it up\./)).toBe(1);
    expect(occurrences(screen, /⚙ memory_search/)).toBe(1);
    expect(occurrences(screen, /↳ memory_search/)).toBe(1);
    expect(occurrences(screen, /fake: are you back/)).toBe(1);

    // The message sent again after the reconnect was answered by replay: no new turn, no new model call.
    expect((await sessionTurns(second.url, session)).map((t) => t.status)).toEqual(['completed', 'interrupted']);
    expect(chatRequests(fake)).toHaveLength(3);
    // Every connection (the first, the failed attempts, the one that made it) is authenticated by its first
    // frame: the token is never in the URL.
    const upgrades = relay.requestLines.filter((line) => line.includes('/ws'));
    expect(upgrades.length).toBeGreaterThanOrEqual(2);
    expect(new Set(upgrades)).toEqual(new Set(['GET /api/v1/ws HTTP/1.1']));
    expect(relay.requestLines.join('\n')).not.toMatch(new RegExp(`token=|${ADMIN_TOKEN}`));
  });

  it('a connection cut mid-turn: the reply goes on meanwhile and resumes after the reconnect without repeats', async () => {
    const { gw, fake } = await gateway();
    const gate = deferred();
    fake.enqueue(
      { content: 'Looking it up. ', tool_calls: [{ name: 'memory_search', arguments: { query: 'kettle' } }] },
      { after: gate.promise, then: { content: 'It is in the kitchen, on the left shelf.', chunks: 4 } },
    );
    const relay = await Relay.start(gw.url);
    relays.push(relay);
    const { pane, session } = await chat(relay.url);

    pane.line('where is the kettle');
    await pane.waitFor(/↳ memory_search/, 'the tool result');
    relay.cut(true); // the connection drops and stays down
    await pane.waitFor(/reconnecting in/, 'the drop noticed');
    gate.resolve(); // the turn finishes while the chat is away
    await pollUntil('the turn to complete', async () => {
      const [turn] = await sessionTurns(gw.url, session);
      return turn?.status === 'completed' ? true : undefined;
    });
    relay.unblock();
    await pane.waitFor(/· reconnected/, 'the reconnection', 1, RECONNECT_TIMEOUT_MS);
    await pane.waitFor(/agent› It is in the kitchen, on the left shelf\.\n {2}✓ completed/, 'the rest of the reply');

    const screen = pane.text();
    expect(occurrences(screen, /Looking it up\./)).toBe(1);
    expect(occurrences(screen, /⚙ memory_search/)).toBe(1);
    expect(occurrences(screen, /↳ memory_search/)).toBe(1);
    expect(occurrences(screen, /It is in the kitchen/)).toBe(1);

    expect(chatRequests(fake)).toHaveLength(2);
    expect((await sessionTurns(gw.url, session)).map((t) => t.status)).toEqual(['completed']);
  });

  it('exits 2 on a usage error and 1 with a clear message when the gateway cannot be reached', async () => {
    const base = ['--url', 'http://127.0.0.1:1'];
    const usage = await runChat([...base, '--session', 'not-a-key'], {}, '');
    expect(usage.status).toBe(2);
    expect(usage.stderr).toMatch(/--session must be a session key starting with "gateway:"/);

    const unreachable = await runChat([...base, '--token', 'x'], {}, '');
    expect(unreachable.status).toBe(1);
    expect(unreachable.stderr).toMatch(
      /gatehouse: cannot reach the gateway at http:\/\/127\.0\.0\.1:1 \(ECONNREFUSED\)/,
    );
  });

  it('refuses a bad token or a wrong API prefix with the reason (exit 1), and reads piped messages in order', async () => {
    const { gw, fake } = await gateway();
    fake.always(echoReply);
    const refused = await runChat(['--url', gw.url, '--token', 'wrong'], {}, 'hello\n');
    expect(refused.status).toBe(1);
    expect(refused.stderr).toMatch(/the gateway refused the token \(UNAUTHORIZED: invalid token\)/);

    // A wrong API prefix: the error envelope's code, message and request id.
    const wrongPrefix = await runChat(['--url', `${gw.url}/nope`, '--token', ADMIN_TOKEN], {}, '');
    expect(wrongPrefix.status).toBe(1);
    expect(wrongPrefix.stderr).toMatch(/refused the WebSocket upgrade: HTTP 404 NOT_FOUND: .+ \[request req_\w+\]/);

    const piped = await runChat(['--url', gw.url], { GATEHOUSE_TOKEN: ADMIN_TOKEN }, 'one\n/status\ntwo\n');
    expect(piped.status, piped.stderr).toBe(0);
    const out = piped.stdout;
    expect(out.indexOf('agent› fake: one')).toBeGreaterThan(-1);
    expect(out.indexOf('agent› fake: one')).toBeLessThan(out.indexOf('· no turn running'));
    expect(out.indexOf('· no turn running')).toBeLessThan(out.indexOf('agent› fake: two'));
    expect(chatRequests(fake).map(lastUserText)).toEqual(['one', 'two']);
  });
});
