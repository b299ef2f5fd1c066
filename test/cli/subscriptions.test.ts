/**
 * `gatehouse subscriptions list|add|test`: the table and its colours, the secret shown once, the test result and
 * the parsing of `--events` as formatting; the requests, the refusals (400 with the gateway's reason, 404, 403)
 * and the exit codes against a scripted API; then against a real gateway (the in-process harness listening on a
 * port) delivering to a local receiver that checks each signature with the reference library
 * (`standardwebhooks`) and answers 200 or 500, and against a gateway with the default rules, which refuses a
 * loopback or plain-http URL. The command line runs in-process (`runCli`), so no build is needed.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { stripVTControlCharacters } from 'node:util';
import { Webhook } from 'standardwebhooks';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { runCli } from '../../src/cli/index.js';
import { EVENT_TYPES as SERVER_EVENT_TYPES } from '../../src/subscriptions/subscriptions.events.js';
import {
  EVENT_TYPES,
  EVENTS_WIDTH,
  formatCreated,
  formatSubscriptions,
  formatTestResult,
  NO_SUBSCRIPTIONS,
  parseEvents,
  SECRET_WARNING,
  URL_WIDTH,
  type CreatedSubscription,
  type SubscriptionInfo,
  type TestResult,
} from '../../src/cli/commands/subscriptions.js';
import { ADMIN_TOKEN, API_TOKEN, useHarness } from '../helpers/harness.js';

/** How a run of the command line ended. */
interface Run {
  code: number | 'serving';
  stdout: string;
  stderr: string;
}

/** Runs `gatehouse <args>` in-process with an empty environment and captured output. */
async function gatehouse(args: string[], options: { tty?: boolean } = {}): Promise<Run> {
  let stdout = '';
  let stderr = '';
  const code = await runCli(args, {
    out: (text) => void (stdout += text),
    err: (text) => void (stderr += text),
    env: {},
    cwd: tmpdir(),
    stdoutIsTTY: options.tty ?? false,
    stdinIsTTY: false,
  });
  return { code, stdout, stderr };
}

/** A subscription as the API answers it, with `patch` over plausible defaults. */
function subscription(patch: Partial<SubscriptionInfo> & { id: string }): SubscriptionInfo {
  return {
    url: 'https://hooks.example.com/gatehouse',
    events: ['turn.completed'],
    description: null,
    enabled: true,
    created_at: '2026-11-28T02:00:00.000Z',
    updated_at: '2026-11-28T02:00:00.000Z',
    stats: { pending: 0, failed: 0, delivered: 0 },
    ...patch,
  };
}

const SECRET = `whsec_${Buffer.alloc(24, 7).toString('base64')}`;

describe('gatehouse subscriptions: formatting', () => {
  afterEach(() => vi.unstubAllEnvs());

  it('a table of id, url, events, enabled, pending and failed, its columns under their headers', () => {
    const longUrl = `https://hooks.example.com/${'x'.repeat(80)}`;
    const text = formatSubscriptions(
      [
        subscription({
          id: 'sub_1',
          events: ['turn.completed', 'turn.failed'],
          stats: { pending: 2, failed: 0, delivered: 9 },
        }),
        subscription({
          id: 'sub_22',
          url: longUrl,
          events: ['message.received', 'turn.completed', 'turn.failed', 'turn.waiting_approval', 'session.created'],
          enabled: false,
          stats: { pending: 0, failed: 3, delivered: 1 },
        }),
        subscription({ id: 'sub_3', events: ['*'], stats: undefined }),
      ],
      false,
    );
    const lines = text.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^ID +URL +EVENTS +ENABLED +PENDING +FAILED$/);
    expect(lines[1]).toMatch(
      /^sub_1 +https:\/\/hooks\.example\.com\/gatehouse +turn\.completed,turn\.failed +yes +2 +0$/,
    );
    expect(lines[2]).toMatch(/^sub_22 +https:\/\/hooks\.example\.com\/x+… +message\.received,.*… +no +0 +3$/);
    expect(lines[3]).toMatch(/^sub_3 +https:\/\/hooks\.example\.com\/gatehouse +\* +yes +- +-$/);
    expect(lines[4]).toBe(
      'failed deliveries are dead letters: retry them on the dashboard (Subscriptions) or POST /deliveries/{id}/retry',
    );
    expect(lines).toHaveLength(5);
    for (const [header, cell] of [
      ['URL', 'https'],
      ['EVENTS', 'turn.completed'],
      ['ENABLED', 'yes'],
      ['PENDING', '2'],
      ['FAILED', '0'],
    ] as const) {
      expect(lines[1]!.indexOf(cell)).toBe(lines[0]!.indexOf(header));
    }
    // Long cells are cut to their width, the cut marked; --json has them whole.
    const url = lines[2]!.slice(lines[0]!.indexOf('URL'), lines[0]!.indexOf('EVENTS')).trimEnd();
    expect(url).toHaveLength(URL_WIDTH);
    const events = lines[2]!.slice(lines[0]!.indexOf('EVENTS'), lines[0]!.indexOf('ENABLED')).trimEnd();
    expect(events).toHaveLength(EVENTS_WIDTH);
    expect(events.endsWith('…')).toBe(true);
    expect(text).not.toMatch(/ +\n/);
  });

  it('on a terminal: enabled green, disabled dim, a failed count above zero red; the columns unmoved', () => {
    // styleText colours only for a terminal: the test's output is none, so colour is forced here.
    vi.stubEnv('FORCE_COLOR', '1');
    const list = [
      subscription({ id: 'a', stats: { pending: 0, failed: 0, delivered: 1 } }),
      subscription({ id: 'b', enabled: false, stats: { pending: 1, failed: 4, delivered: 0 } }),
    ];
    const text = formatSubscriptions(list, true);
    const lines = text.split('\n');
    expect(lines[1]).toContain('\u001b[32myes');
    expect(lines[1]).not.toContain('\u001b[31m');
    expect(lines[2]).toContain('\u001b[2mno');
    expect(lines[2]).toContain('\u001b[31m4');
    expect(stripVTControlCharacters(text)).toBe(formatSubscriptions(list, false));
  });

  it('no subscriptions: one line saying how to add one', () => {
    expect(formatSubscriptions([], false)).toBe(`${NO_SUBSCRIPTIONS}\n`);
    expect(NO_SUBSCRIPTIONS).toBe('No subscriptions: add one with gatehouse subscriptions add <url> --events <type,…>');
  });

  it('a new subscription: its id, url, events, the secret and the warning that it is not shown again', () => {
    const created: CreatedSubscription = {
      ...subscription({ id: 'sub_9', events: ['turn.completed', 'turn.failed'], description: 'CRM sync' }),
      secret: SECRET,
    };
    expect(formatCreated(created, false)).toBe(
      [
        'Created subscription sub_9: https://hooks.example.com/gatehouse',
        '  events: turn.completed, turn.failed',
        '  description: CRM sync',
        '',
        `Secret: ${SECRET}`,
        SECRET_WARNING,
        '',
      ].join('\n'),
    );
    expect(SECRET_WARNING).toContain('not shown again');
  });

  it('a test result: delivered or failed, the status (or that none came), the time and the error', () => {
    const ok: TestResult = { delivery_id: 'del_1', ok: true, status: 204, error: null, duration_ms: 41.6 };
    expect(formatTestResult('sub_1', ok, false)).toBe('Test delivery of sub_1: delivered (HTTP 204, 42 ms)\n');
    const refused: TestResult = {
      delivery_id: 'del_2',
      ok: false,
      status: 500,
      error: 'HTTP 500 Internal Server Error',
      duration_ms: 12,
    };
    expect(formatTestResult('sub_1', refused, false)).toBe(
      'Test delivery of sub_1: failed (HTTP 500, 12 ms)\n  error: HTTP 500 Internal Server Error\n',
    );
    const down: TestResult = {
      delivery_id: 'del_3',
      ok: false,
      status: null,
      error: 'connect ECONNREFUSED 127.0.0.1:9',
      duration_ms: 3,
    };
    expect(formatTestResult('sub_1', down, false)).toBe(
      'Test delivery of sub_1: failed (no answer, 3 ms)\n  error: connect ECONNREFUSED 127.0.0.1:9\n',
    );
  });

  it('the event types named in --help are the ones the gateway knows', () => {
    expect([...EVENT_TYPES]).toEqual([...SERVER_EVENT_TYPES]);
  });

  it('--events: comma-separated, trimmed, blanks and repeats dropped', () => {
    expect(parseEvents('turn.completed, turn.failed,,turn.completed ')).toEqual(['turn.completed', 'turn.failed']);
    expect(parseEvents('*')).toEqual(['*']);
    expect(parseEvents(' , ')).toEqual([]);
  });
});

/** One request the scripted API saw. */
interface Seen {
  method: string;
  url: string;
  authorization: string | undefined;
  body: unknown;
}

describe('gatehouse subscriptions against a scripted API', () => {
  let api: Server;
  let url: string;
  const seen: Seen[] = [];
  let list: SubscriptionInfo[] = [];
  let testResult: TestResult = { delivery_id: 'del_0', ok: true, status: 200, error: null, duration_ms: 5 };

  /** Counts a single read answers (GET /subscriptions/{id}), by id; the list answers none of its own. */
  const single = new Map<string, SubscriptionInfo['stats']>();

  /** An error envelope. */
  function envelope(message: string, requestId: string, details: unknown): unknown {
    return { error: { code: 'BAD_REQUEST', message, request_id: requestId, details } };
  }

  /** Answers like the gateway: list, one, create (400 for an unknown event or a refused URL), test, 404, 403. */
  function answer(request: IncomingMessage, body: unknown): { status: number; body: unknown } {
    if (request.headers.authorization !== `Bearer ${ADMIN_TOKEN}`) {
      return { status: 403, body: { error: { code: 'FORBIDDEN', message: 'admin only', request_id: 'req_1' } } };
    }
    if (request.method === 'GET' && request.url === '/api/v1/subscriptions')
      return { status: 200, body: { items: list } };
    if (request.method === 'POST' && request.url === '/api/v1/subscriptions') {
      const { url: target, events } = body as { url: string; events: string[] };
      // The gateway's validation errors: the message, and each problem at its path in the details.
      if (events.includes('turn.exploded')) {
        const issue = { path: 'body.events.0', message: 'must be one of *, message.received, turn.completed' };
        return { status: 400, body: envelope('invalid body', 'req_2', [issue]) };
      }
      if (target.startsWith('http://')) {
        const issue = {
          path: 'url',
          message: 'must be an https URL (http is refused unless subscriptions.allow_http is true)',
        };
        return { status: 400, body: envelope('request validation failed', 'req_3', [issue]) };
      }
      if (new URL(target).hostname === '127.0.0.1') {
        const issue = { path: 'url', message: 'refused: loopback' };
        return { status: 400, body: envelope('subscription URL refused: loopback', 'req_4', [issue]) };
      }
      return { status: 201, body: { ...subscription({ id: 'sub_new', url: target, events }), secret: SECRET } };
    }
    const one = /^\/api\/v1\/subscriptions\/([^/]+)$/.exec(request.url ?? '');
    if (request.method === 'GET' && one) {
      const found = list.find((s) => s.id === decodeURIComponent(one[1]!));
      if (!found) return { status: 404, body: { error: { code: 'NOT_FOUND', message: 'subscription not found' } } };
      return { status: 200, body: { ...found, stats: single.get(found.id) ?? found.stats } };
    }
    const test = /^\/api\/v1\/subscriptions\/([^/]+)\/test$/.exec(request.url ?? '');
    if (request.method === 'POST' && test) {
      if (!list.some((s) => s.id === decodeURIComponent(test[1]!))) {
        return { status: 404, body: { error: { code: 'NOT_FOUND', message: 'subscription not found' } } };
      }
      return { status: 200, body: testResult };
    }
    return { status: 404, body: { error: { code: 'NOT_FOUND', message: 'no route' } } };
  }

  beforeAll(async () => {
    api = createServer((request, response) => {
      let raw = '';
      request.on('data', (chunk: Buffer) => (raw += chunk.toString('utf8')));
      request.on('end', () => {
        const body: unknown = raw ? JSON.parse(raw) : undefined;
        seen.push({
          method: request.method ?? '',
          url: request.url ?? '',
          authorization: request.headers.authorization,
          body,
        });
        const answered = answer(request, body);
        response.writeHead(answered.status, { 'content-type': 'application/json' }).end(JSON.stringify(answered.body));
      });
    });
    await new Promise<void>((resolve) => api.listen({ host: '127.0.0.1', port: 0 }, resolve));
    url = `http://127.0.0.1:${(api.address() as { port: number }).port}`;
  });
  afterAll(async () => {
    await new Promise((resolve) => api.close(resolve));
  });

  it('list: GET /subscriptions with the token; the table; --json prints the body as it came; bare lists too', async () => {
    list = [subscription({ id: 'sub_1', stats: { pending: 1, failed: 0, delivered: 3 } })];
    seen.length = 0;
    const run = await gatehouse(['subscriptions', 'list', '--url', url, '--token', ADMIN_TOKEN]);
    expect(run.code, run.stderr).toBe(0);
    expect(seen).toEqual([
      { method: 'GET', url: '/api/v1/subscriptions', authorization: `Bearer ${ADMIN_TOKEN}`, body: undefined },
    ]);
    expect(run.stdout).toMatch(
      /^ID +URL +EVENTS +ENABLED +PENDING +FAILED\nsub_1 +https:\/\/hooks\.example\.com\/gatehouse +turn\.completed +yes +1 +0\n$/,
    );
    const json = await gatehouse(['subscriptions', 'list', '--json', '--url', url, '--token', ADMIN_TOKEN]);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual({ items: list });
    const bare = await gatehouse(['subscriptions', '--url', url, '--token', ADMIN_TOKEN]);
    expect(bare.code, bare.stderr).toBe(0);
    expect(bare.stdout).toBe(run.stdout);

    list = [];
    const empty = await gatehouse(['subscriptions', 'list', '--url', url, '--token', ADMIN_TOKEN]);
    expect(empty.stdout).toBe(`${NO_SUBSCRIPTIONS}\n`);
  });

  it('list without counts: each subscription is read on its own for them (a vanished one stays as listed)', async () => {
    list = [
      subscription({ id: 'sub_a', stats: undefined }),
      subscription({ id: 'sub_b', stats: undefined }),
      subscription({ id: 'sub_gone', stats: undefined }),
    ];
    single.set('sub_a', { pending: 4, failed: 1, delivered: 7 });
    single.set('sub_b', { pending: 0, failed: 0, delivered: 2 });
    seen.length = 0;
    const run = await gatehouse(['subscriptions', 'list', '--url', url, '--token', ADMIN_TOKEN]);
    expect(run.code, run.stderr).toBe(0);
    expect(seen.map((r) => `${r.method} ${r.url}`).sort()).toEqual([
      'GET /api/v1/subscriptions',
      'GET /api/v1/subscriptions/sub_a',
      'GET /api/v1/subscriptions/sub_b',
      'GET /api/v1/subscriptions/sub_gone',
    ]);
    const lines = run.stdout.split('\n');
    expect(lines[1]).toMatch(/^sub_a +\S+ +turn\.completed +yes +4 +1$/);
    expect(lines[2]).toMatch(/^sub_b +\S+ +turn\.completed +yes +0 +0$/);
    expect(lines[3]).toMatch(/^sub_gone +\S+ +turn\.completed +yes +- +-$/);
    // The --json of the same list carries the counts read.
    list = list.filter((s) => s.id !== 'sub_gone');
    const json = await gatehouse(['subscriptions', 'list', '--json', '--url', url, '--token', ADMIN_TOKEN]);
    const items = (JSON.parse(json.stdout) as { items: SubscriptionInfo[] }).items;
    expect(items.map((s) => [s.id, s.stats])).toEqual([
      ['sub_a', { pending: 4, failed: 1, delivered: 7 }],
      ['sub_b', { pending: 0, failed: 0, delivered: 2 }],
    ]);
    single.clear();
  });

  it('add: POST /subscriptions with the url, the parsed events and the description; the secret once', async () => {
    seen.length = 0;
    const run = await gatehouse([
      'subscriptions',
      'add',
      'https://hooks.example.com/in',
      '--events',
      'turn.completed, turn.failed',
      '--description',
      'CRM sync',
      '--url',
      url,
      '--token',
      ADMIN_TOKEN,
    ]);
    expect(run.code, run.stderr).toBe(0);
    expect(seen).toEqual([
      {
        method: 'POST',
        url: '/api/v1/subscriptions',
        authorization: `Bearer ${ADMIN_TOKEN}`,
        body: {
          url: 'https://hooks.example.com/in',
          events: ['turn.completed', 'turn.failed'],
          description: 'CRM sync',
        },
      },
    ]);
    expect(run.stdout).toContain('Created subscription sub_new: https://hooks.example.com/in\n');
    expect(run.stdout).toContain(`\nSecret: ${SECRET}\n${SECRET_WARNING}\n`);
    expect(run.stdout.split(SECRET)).toHaveLength(2);

    // No description: none is sent. --json: the answer as it came, the secret included.
    seen.length = 0;
    const json = await gatehouse([
      'subscriptions',
      'add',
      'https://hooks.example.com/all',
      '--events',
      '*',
      '--json',
      '--url',
      url,
      '--token',
      ADMIN_TOKEN,
    ]);
    expect(json.code, json.stderr).toBe(0);
    expect(seen[0]?.body).toEqual({ url: 'https://hooks.example.com/all', events: ['*'] });
    expect(JSON.parse(json.stdout)).toMatchObject({ id: 'sub_new', events: ['*'], secret: SECRET });
  });

  it('add refused with 400: the reason and each field problem not already said, exit 1', async () => {
    const refused = (url_: string, events: string) =>
      gatehouse(['subscriptions', 'add', url_, '--events', events, '--url', url, '--token', ADMIN_TOKEN]);
    const event = await refused('https://hooks.example.com/in', 'turn.exploded');
    expect(event.code).toBe(1);
    expect(event.stdout).toBe('');
    expect(event.stderr).toBe(
      'gatehouse: not added: invalid body [request req_2]\n' +
        '  events.0: must be one of *, message.received, turn.completed\n',
    );
    const plainHttp = await refused('http://hooks.example.com/in', 'turn.completed');
    expect(plainHttp.code).toBe(1);
    expect(plainHttp.stderr).toBe(
      'gatehouse: not added: request validation failed [request req_3]\n' +
        '  url: must be an https URL (http is refused unless subscriptions.allow_http is true)\n',
    );
    // The reason is in the message already: no line repeats it.
    const loopback = await refused('https://127.0.0.1:9/hook', '*');
    expect(loopback.code).toBe(1);
    expect(loopback.stderr).toBe('gatehouse: not added: subscription URL refused: loopback [request req_4]\n');
  });

  it('add without --events, or with an empty list, is a usage error and sends nothing', async () => {
    seen.length = 0;
    const missing = await gatehouse([
      'subscriptions',
      'add',
      'https://x.example.com',
      '--url',
      url,
      '--token',
      ADMIN_TOKEN,
    ]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("required option '--events <types>' not specified");
    const blank = await gatehouse([
      'subscriptions',
      'add',
      'https://x.example.com',
      '--events',
      ' , ',
      '--url',
      url,
      '--token',
      ADMIN_TOKEN,
    ]);
    expect(blank.code).toBe(2);
    expect(blank.stderr).toContain('--events needs at least one event type');
    const noUrl = await gatehouse(['subscriptions', 'add', '--events', '*', '--url', url, '--token', ADMIN_TOKEN]);
    expect(noUrl.code).toBe(2);
    expect(noUrl.stderr).toContain("missing required argument 'url'");
    expect(seen).toEqual([]);
  });

  it('test: POST /subscriptions/<id>/test (the id encoded); delivered exits 0, failed prints why and exits 1', async () => {
    list = [subscription({ id: 'sub_1' })];
    testResult = { delivery_id: 'del_1', ok: true, status: 200, error: null, duration_ms: 8 };
    seen.length = 0;
    const ok = await gatehouse(['subscriptions', 'test', 'sub_1', '--url', url, '--token', ADMIN_TOKEN]);
    expect(ok.code, ok.stderr).toBe(0);
    expect(seen.map((r) => `${r.method} ${r.url}`)).toEqual(['POST /api/v1/subscriptions/sub_1/test']);
    expect(ok.stdout).toBe('Test delivery of sub_1: delivered (HTTP 200, 8 ms)\n');

    testResult = { delivery_id: 'del_2', ok: false, status: 500, error: 'HTTP 500', duration_ms: 4 };
    const failed = await gatehouse(['subscriptions', 'test', 'sub_1', '--url', url, '--token', ADMIN_TOKEN]);
    expect(failed.code).toBe(1);
    // An error that says no more than the status is not repeated.
    expect(failed.stdout).toBe('Test delivery of sub_1: failed (HTTP 500, 4 ms)\n');
    expect(failed.stderr).toBe('gatehouse: the test delivery to subscription sub_1 failed\n');
    const json = await gatehouse(['subscriptions', 'test', 'sub_1', '--json', '--url', url, '--token', ADMIN_TOKEN]);
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout)).toEqual(testResult);

    seen.length = 0;
    const unknown = await gatehouse(['subscriptions', 'test', 'a/b c', '--url', url, '--token', ADMIN_TOKEN]);
    expect(seen[0]?.url).toBe('/api/v1/subscriptions/a%2Fb%20c/test');
    expect(unknown.code).toBe(1);
    expect(unknown.stdout).toBe('');
    expect(unknown.stderr).toBe(
      'gatehouse: no subscription has the id "a/b c" (gatehouse subscriptions list shows them)\n',
    );
  });

  it('an api token: the refusal with the admin hint, exit 1', async () => {
    for (const args of [
      ['subscriptions', 'list'],
      ['subscriptions', 'add', 'https://hooks.example.com/in', '--events', '*'],
      ['subscriptions', 'test', 'sub_1'],
    ]) {
      const run = await gatehouse([...args, '--url', url, '--token', API_TOKEN]);
      expect(run.code).toBe(1);
      expect(run.stdout).toBe('');
      expect(run.stderr).toBe('gatehouse: FORBIDDEN: admin only (this needs an admin token) [request req_1]\n');
    }
  });

  it('help: subscriptions among the commands; its --help names list, add and test', async () => {
    const top = await gatehouse(['--help']);
    expect(top.code).toBe(0);
    expect(top.stdout).toMatch(/^\s+subscriptions\b.*outbound webhooks/m);
    const help = await gatehouse(['subscriptions', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^\s+list\b/m);
    expect(help.stdout).toMatch(/^\s+add\b.*<url>/m);
    expect(help.stdout).toMatch(/^\s+test\b.*<id>/m);
    const add = await gatehouse(['subscriptions', 'help', 'add']);
    expect(add.stdout).toMatch(/--events <types>/);
    expect(add.stdout).toContain('turn.waiting_approval');
    expect(add.stdout).toMatch(/--url <url>/);
  });
});

/** One delivery the receiver got: its headers, raw body and whether the signature checked out. */
interface Received {
  path: string;
  headers: Record<string, string>;
  body: string;
  verified: boolean;
}

/**
 * A receiver on 127.0.0.1: `/ok` answers 200, `/fail` 500. Each request's signature is checked with the
 * secret registered for its path (`secrets`), as a real receiver would.
 */
async function startReceiver(): Promise<{
  url: string;
  received: Received[];
  secrets: Map<string, string>;
  close(): Promise<void>;
}> {
  const received: Received[] = [];
  const secrets = new Map<string, string>();
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const headers = Object.fromEntries(
        Object.entries(request.headers).map(([name, value]) => [
          name,
          Array.isArray(value) ? value.join(',') : (value ?? ''),
        ]),
      );
      const path = request.url ?? '';
      let verified = false;
      const secret = secrets.get(path);
      if (secret) {
        try {
          new Webhook(secret).verify(body, headers);
          verified = true;
        } catch {
          verified = false;
        }
      }
      received.push({ path, headers, body, verified });
      response.writeHead(path === '/ok' ? 200 : 500).end();
    });
  });
  await new Promise<void>((resolve) => server.listen({ host: '127.0.0.1', port: 0 }, resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    received,
    secrets,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

describe('gatehouse subscriptions against a gateway that may deliver to a local receiver', () => {
  const t = useHarness({ config: { subscriptions: { allow_private_targets: true, allow_http: true } } });
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  beforeAll(async () => {
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await receiver.close();
  });

  /** `gatehouse subscriptions add <receiver><path> --events <events> --json` → the created subscription. */
  async function add(url: string, path: string, events: string): Promise<CreatedSubscription> {
    const run = await gatehouse([
      'subscriptions',
      'add',
      `${receiver.url}${path}`,
      '--events',
      events,
      '--json',
      '--url',
      url,
      '--token',
      ADMIN_TOKEN,
    ]);
    expect(run.code, run.stderr).toBe(0);
    const created = JSON.parse(run.stdout) as CreatedSubscription;
    receiver.secrets.set(path, created.secret);
    return created;
  }

  it('add prints the secret once; list shows the subscription, never the secret; test delivers signed', async () => {
    const url = await t.gateway.listen();
    const text = await gatehouse([
      'subscriptions',
      'add',
      `${receiver.url}/ok`,
      '--events',
      'turn.completed,turn.failed',
      '--description',
      'the test receiver',
      '--url',
      url,
      '--token',
      ADMIN_TOKEN,
    ]);
    expect(text.code, text.stderr).toBe(0);
    const secret = /^Secret: (whsec_\S+)$/m.exec(text.stdout)?.[1];
    expect(secret).toBeDefined();
    expect(text.stdout).toContain(SECRET_WARNING);
    const id = /^Created subscription (\S+): /m.exec(text.stdout)?.[1] ?? '';
    expect(text.stdout).toContain(`Created subscription ${id}: ${receiver.url}/ok\n`);
    receiver.secrets.set('/ok', secret!);

    const json = await gatehouse(['subscriptions', 'list', '--json', '--url', url, '--token', ADMIN_TOKEN]);
    expect(json.code, json.stderr).toBe(0);
    const items = (JSON.parse(json.stdout) as { items: SubscriptionInfo[] }).items;
    expect(items).toEqual([
      expect.objectContaining({
        id,
        url: `${receiver.url}/ok`,
        events: ['turn.completed', 'turn.failed'],
        description: 'the test receiver',
        enabled: true,
      }),
    ]);
    expect(json.stdout).not.toContain(secret!);
    const table = await gatehouse(['subscriptions', 'list', '--url', url, '--token', ADMIN_TOKEN]);
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout).toMatch(
      new RegExp(`^${id} +http://127\\.0\\.0\\.1:\\d+/ok +turn\\.completed,turn\\.failed +yes +\\d+ +0$`, 'm'),
    );
    expect(table.stdout).not.toContain(secret!);

    const before = receiver.received.length;
    const test = await gatehouse(['subscriptions', 'test', id, '--url', url, '--token', ADMIN_TOKEN]);
    expect(test.code, test.stderr).toBe(0);
    expect(test.stdout).toMatch(new RegExp(`^Test delivery of ${id}: delivered \\(HTTP 200, \\d+ ms\\)\\n$`));
    const got = receiver.received.slice(before);
    expect(got).toHaveLength(1);
    expect(got[0]).toMatchObject({ path: '/ok', verified: true });
    expect(got[0]!.headers['webhook-id']).toEqual(expect.any(String));
    expect(got[0]!.headers['webhook-signature']).toMatch(/^v1,/);
    expect(JSON.parse(got[0]!.body)).toEqual(
      expect.objectContaining({ type: expect.any(String), timestamp: expect.any(String) }),
    );
  });

  it('test of a receiver answering 500: failed with its status, exit 1; an unknown id is named', async () => {
    const url = await t.gateway.listen();
    const created = await add(url, '/fail', '*');
    const run = await gatehouse(['subscriptions', 'test', created.id, '--url', url, '--token', ADMIN_TOKEN]);
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(new RegExp(`^Test delivery of ${created.id}: failed \\(HTTP 500, \\d+ ms\\)`));
    expect(run.stderr).toBe(`gatehouse: the test delivery to subscription ${created.id} failed\n`);
    expect(receiver.received.at(-1)).toMatchObject({ path: '/fail', verified: true });

    const unknown = await gatehouse(['subscriptions', 'test', 'sub_nope', '--url', url, '--token', ADMIN_TOKEN]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toBe(
      'gatehouse: no subscription has the id "sub_nope" (gatehouse subscriptions list shows them)\n',
    );
  });

  it('an unknown event type is refused with the events allowed; an api token is told it needs an admin one', async () => {
    const url = await t.gateway.listen();
    const run = await gatehouse([
      'subscriptions',
      'add',
      `${receiver.url}/ok`,
      '--events',
      'turn.exploded',
      '--url',
      url,
      '--token',
      ADMIN_TOKEN,
    ]);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(/^gatehouse: not added: .*\n {2}events\.0: .*\n$/);
    expect(run.stderr).toContain('  events.0: must be one of *, message.received, turn.completed');
    const api = await gatehouse(['subscriptions', 'list', '--url', url, '--token', API_TOKEN]);
    expect(api.code).toBe(1);
    expect(api.stderr).toContain('(this needs an admin token)');
  });
});

describe('gatehouse subscriptions against a gateway with the default rules', () => {
  const t = useHarness({});

  it('a loopback https URL and a plain-http URL are refused with their reason; nothing is created', async () => {
    const url = await t.gateway.listen();
    const loopback = await gatehouse([
      'subscriptions',
      'add',
      'https://127.0.0.1:9/hook',
      '--events',
      '*',
      '--url',
      url,
      '--token',
      ADMIN_TOKEN,
    ]);
    expect(loopback.code).toBe(1);
    expect(loopback.stderr).toMatch(/^gatehouse: not added: subscription URL refused: loopback \[request \S+\]\n$/);
    const plainHttp = await gatehouse([
      'subscriptions',
      'add',
      'http://hooks.example.com/in',
      '--events',
      '*',
      '--url',
      url,
      '--token',
      ADMIN_TOKEN,
    ]);
    expect(plainHttp.code).toBe(1);
    expect(plainHttp.stderr).toMatch(/^gatehouse: not added: .*\n {2}url: must be an https URL/);
    const list = await gatehouse(['subscriptions', 'list', '--url', url, '--token', ADMIN_TOKEN]);
    expect(list.stdout).toBe(`${NO_SUBSCRIPTIONS}\n`);
  });
});
