/**
 * `gatehouse chat` (the BUILT binary, piped input) while a turn waits at `approve? [y/n]` and the decision is made
 * in another client (here the API, as the dashboard does): the chat follows the turn's events, says it was
 * approved elsewhere, shows the rest of the reply and goes on; a y typed afterwards gets a note, not an error,
 * and the chat exits 0.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { killAllNow, ROOT } from '../../bench/processes.js';
import { chatRequests, startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.js';
import { ADMIN_TOKEN, call, e2eHome, pollUntil, removeE2EHomes, startGateway, type TurnView } from '../e2e/helpers.js';

const MAIN = join(ROOT, 'dist', 'src', 'main.js');
const WAIT_MS = 10_000;

/** The chat with its standard input kept open (lines are written as the test goes), output collected. */
class PipedChat {
  stdout = '';
  stderr = '';
  readonly exited: Promise<number | null>;
  private readonly child: ChildProcessWithoutNullStreams;

  constructor(url: string, session: string) {
    this.child = spawn(process.execPath, [MAIN, 'chat', '--url', url, '--session', session], {
      env: { PATH: process.env.PATH, TZ: 'UTC', GATEHOUSE_TOKEN: ADMIN_TOKEN },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    this.child.stdout.on('data', (chunk: Buffer) => (this.stdout += chunk.toString('utf8')));
    this.child.stderr.on('data', (chunk: Buffer) => (this.stderr += chunk.toString('utf8')));
    this.exited = new Promise((resolve) => this.child.on('close', (code) => resolve(code)));
  }

  line(text: string): void {
    this.child.stdin.write(`${text}\n`);
  }

  end(): void {
    this.child.stdin.end();
  }

  kill(): void {
    this.child.kill('SIGKILL');
  }

  /** Waits until the output matches `pattern`; returns the output. */
  async waitFor(pattern: RegExp, what: string): Promise<string> {
    await pollUntil(what, async () => (pattern.test(this.stdout) ? true : undefined), {
      timeoutMs: WAIT_MS,
      intervalMs: 50,
      describe: () => `the output was:\n${this.stdout}\nstderr:\n${this.stderr}`,
    });
    return this.stdout;
  }
}

describe('gatehouse chat: an approval made in another client', { timeout: 60_000 }, () => {
  const chats: PipedChat[] = [];
  const fakes: FakeOpenAI[] = [];

  beforeAll(() => {
    if (!existsSync(join(ROOT, 'dist', 'src', 'cli', 'chat', 'chat.client.js'))) {
      throw new Error('the build is missing or stale: run `node scripts/build-if-needed.mjs` first');
    }
  });

  afterEach(async () => {
    for (const chat of chats.splice(0)) chat.kill();
    killAllNow();
    const closing = fakes.splice(0);
    await Promise.all(closing.map((fake) => fake.close()));
    removeE2EHomes();
    for (const fake of closing) fake.verify();
  });

  it('the waiting prompt gives way to "approved in another client", the reply follows, and a late y is no error', async () => {
    const fake = await startFakeOpenAI();
    fakes.push(fake);
    const gw = await startGateway(
      e2eHome(fake, {
        agent: { approval_required: ['memory_save'] },
        security: { rate_limits: { read: 100_000, write: 100_000 } },
      }),
    );
    fake.enqueue(
      { tool_calls: [{ name: 'memory_save', arguments: { content: 'The teapot is green' } }] },
      { content: 'Saved: the teapot is green.' },
    );
    const session = `gateway:cli:approved-elsewhere-${process.pid}`;
    const chat = new PipedChat(gw.url, session);
    chats.push(chat);

    chat.line('remember the teapot');
    await chat.waitFor(/approve\? \[y\/n\]/, 'the approval question');
    expect(chat.stdout).toMatch(/⏸ approval needed to run memory_save \{"content":"The teapot is green"\}/);
    const turns = await call<{ items: TurnView[] }>(
      gw.url,
      'GET',
      `/api/v1/sessions/${encodeURIComponent(session)}/turns`,
      { token: ADMIN_TOKEN },
    );
    const paused = turns.body.items[0]!;
    expect(paused.status).toBe('waiting_approval');

    // Approved elsewhere while the terminal waits.
    const approved = await call(gw.url, 'POST', `/api/v1/turns/${encodeURIComponent(paused.event_id)}/approve`, {
      token: ADMIN_TOKEN,
    });
    expect(approved.status).toBe(200);
    await chat.waitFor(/approved in another client: the tool runs/, 'the note of the decision made elsewhere');
    await chat.waitFor(/Saved: the teapot is green\.\n {2}✓ completed/, 'the rest of the reply');

    // A y typed late: a note, not an error, and not a message to the agent.
    chat.line('y');
    await chat.waitFor(/approved in another client \(turn evt_\w+\): nothing left to decide/, 'the late answer');
    chat.end();
    expect(await chat.exited).toBe(0);
    expect(chat.stdout).not.toMatch(/BAD_REQUEST|✗/);
    expect(chat.stdout.match(/Saved: the teapot is green\./g)).toHaveLength(1);
    expect(chatRequests(fake)).toHaveLength(2); // the late y never reached the model
  });
});
