import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  BlockedTargetError,
  checkTarget,
  classifyAddress,
  guardedFetch,
  type GuardedFetch,
  type OutboundPolicy,
} from './outbound.js';

type Lookup = NonNullable<OutboundPolicy['lookup']>;

/** A lookup that answers from a list, one answer per call (the last repeats), and counts its calls. */
function scriptedLookup(...answers: string[][]): Lookup & { calls: string[] } {
  const calls: string[] = [];
  const lookup: Lookup = (host) => {
    calls.push(host);
    const answer = answers[Math.min(calls.length - 1, answers.length - 1)] ?? [];
    return Promise.resolve(answer.map((address) => ({ address, family: address.includes(':') ? 6 : 4 })));
  };
  return Object.assign(lookup, { calls });
}

/** A lookup that must not be asked. */
const noLookup: Lookup = (host) => Promise.reject(new Error(`lookup of ${host} was not expected`));

describe('classifyAddress', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['::1', 'loopback'],
    ['[::1]', 'loopback'],
    ['10.0.0.1', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['fc00::1', 'private'],
    ['fd12:3456::1', 'private'],
    ['169.254.1.1', 'link-local'],
    ['fe80::1', 'link-local'],
    ['fe80::1%eth0', 'link-local'],
    ['169.254.169.254', 'link-local (cloud metadata)'],
    ['fd00:ec2::254', 'private (cloud metadata)'],
    ['100.100.100.200', 'carrier-grade NAT (cloud metadata)'],
    ['100.64.0.1', 'carrier-grade NAT'],
    ['100.127.255.255', 'carrier-grade NAT'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['ff02::1', 'multicast'],
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'unspecified'],
    ['::', 'unspecified'],
    ['255.255.255.255', 'broadcast'],
    ['240.0.0.1', 'reserved'],
    ['192.0.2.1', 'documentation'],
    ['198.51.100.7', 'documentation'],
    ['203.0.113.9', 'documentation'],
    ['2001:db8::1', 'documentation'],
    ['198.18.0.1', 'benchmarking'],
    ['2001:2::1', 'benchmarking'],
    ['::ffff:127.0.0.1', 'loopback (IPv4-mapped)'],
    ['::ffff:7f00:1', 'loopback (IPv4-mapped)'],
    ['::ffff:10.0.0.1', 'private (IPv4-mapped)'],
    ['::ffff:169.254.169.254', 'link-local (cloud metadata, IPv4-mapped)'],
    ['::127.0.0.1', 'loopback (IPv4-compatible)'],
    ['::8.8.8.8', 'reserved (IPv4-compatible)'],
    ['64:ff9b::a00:1', 'private (NAT64)'],
    ['64:ff9b::7f00:1', 'loopback (NAT64)'],
    ['64:ff9b:1::1', 'private (local-use NAT64)'],
    ['2002:7f00:1::1', 'loopback (6to4)'],
    ['2002:a9fe:a9fe::1', 'link-local (cloud metadata, 6to4)'],
    ['2001:0:4136:e378:8000:63bf:80ff:fffe', 'loopback (Teredo)'], // client 127.0.0.1, inverted
    ['2001:0:a00:1::1', 'private (Teredo)'], // server 10.0.0.1
    ['fec0::1', 'private (deprecated site-local)'],
    ['100::1', 'reserved (discard)'],
    ['4000::1', 'reserved'],
    ['localhost', 'not an IP address'],
    ['example.com', 'not an IP address'],
    ['', 'not an IP address'],
  ])('%s is not public: %s', (ip, reason) => {
    expect(classifyAddress(ip)).toEqual({ public: false, reason });
  });

  it.each([
    '1.1.1.1',
    '8.8.8.8',
    '93.184.216.34',
    '100.63.255.255', // just below carrier-grade NAT
    '100.128.0.0', // just above it
    '172.15.255.255',
    '172.32.0.0',
    '169.253.255.255',
    '223.255.255.255',
    '2606:4700:4700::1111',
    '2001:4860:4860::8888',
    '::ffff:8.8.8.8',
    '64:ff9b::808:808',
    '2002:808:808::1',
    '2001:0:4136:e378:8000:63bf:f7f7:f7f7', // Teredo, client 8.8.8.8
  ])('%s is public', (ip) => {
    expect(classifyAddress(ip)).toEqual({ public: true });
  });
});

describe('checkTarget', () => {
  const closed: OutboundPolicy = { allowPrivate: false, lookup: noLookup };

  it.each(['file:///etc/passwd', 'ftp://example.com/', 'data:,hello', 'gopher://example.com/', 'ws://example.com/'])(
    'refuses the scheme of %s',
    async (url) => {
      const error = await checkTarget(url, { allowPrivate: true, lookup: noLookup }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(BlockedTargetError);
      expect((error as BlockedTargetError).reason).toMatch(/^scheme .* is not allowed/);
    },
  );

  it('refuses a URL that does not parse', async () => {
    await expect(checkTarget('not a url', closed)).rejects.toBeInstanceOf(BlockedTargetError);
  });

  it('checks a literal IP without a lookup, IPv6 in brackets and the legacy IPv4 forms too', async () => {
    await expect(checkTarget('https://1.1.1.1/mcp', closed)).resolves.toEqual({ address: '1.1.1.1', family: 4 });
    await expect(checkTarget(new URL('https://[2606:4700:4700::1111]:8443/'), closed)).resolves.toEqual({
      address: '2606:4700:4700::1111',
      family: 6,
    });
    for (const url of ['http://127.0.0.1:8080/', 'http://[::1]/', 'http://2130706433/', 'http://0x7f.1/']) {
      const error = await checkTarget(url, closed).catch((e: unknown) => e);
      expect(error, url).toBeInstanceOf(BlockedTargetError);
      expect((error as BlockedTargetError).reason).toBe('loopback');
    }
    await expect(checkTarget('http://[::ffff:10.0.0.1]/', closed)).rejects.toMatchObject({
      address: '::ffff:a00:1',
      reason: 'private (IPv4-mapped)',
    });
  });

  it('takes localhost and *.localhost as loopback without asking DNS', async () => {
    for (const url of ['http://localhost:3000/', 'http://LOCALHOST./', 'http://mcp.localhost/']) {
      await expect(checkTarget(url, closed), url).rejects.toMatchObject({ reason: 'loopback' });
    }
    await expect(checkTarget('http://localhost/', { allowPrivate: true, lookup: noLookup })).resolves.toEqual({
      address: '127.0.0.1',
      family: 4,
    });
  });

  it('refuses a name that resolves to a private address, naming host, address and range', async () => {
    const lookup = scriptedLookup(['10.1.2.3']);
    const error = await checkTarget('https://mcp.example.com/mcp', { allowPrivate: false, lookup }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(BlockedTargetError);
    expect(error).toMatchObject({ host: 'mcp.example.com', address: '10.1.2.3', reason: 'private' });
    expect((error as Error).message).toBe('outbound call to mcp.example.com (10.1.2.3) refused: private');
    expect(lookup.calls).toEqual(['mcp.example.com']);
  });

  it('refuses a name when any one of its addresses is not public', async () => {
    const lookup = scriptedLookup(['1.1.1.1', '2606:4700:4700::1111', '::ffff:127.0.0.1']);
    await expect(checkTarget('https://mixed.example.com/', { allowPrivate: false, lookup })).rejects.toMatchObject({
      address: '::ffff:127.0.0.1',
      reason: 'loopback (IPv4-mapped)',
    });
  });

  it('resolves to the first address when every one is public', async () => {
    const lookup = scriptedLookup(['2606:4700:4700::1111', '1.1.1.1']);
    await expect(checkTarget('https://one.example.com/', { allowPrivate: false, lookup })).resolves.toEqual({
      address: '2606:4700:4700::1111',
      family: 6,
    });
  });

  it('refuses a name with no address, and lets a failed resolution reject with its own error', async () => {
    await expect(
      checkTarget('https://empty.example.com/', { allowPrivate: false, lookup: scriptedLookup([]) }),
    ).rejects.toMatchObject({ reason: 'the name has no address' });
    const failing: Lookup = () => Promise.reject(Object.assign(new Error('queryA ENOTFOUND'), { code: 'ENOTFOUND' }));
    const error = await checkTarget('https://nx.example.com/', { allowPrivate: false, lookup: failing }).catch(
      (e: unknown) => e,
    );
    expect(error).not.toBeInstanceOf(BlockedTargetError);
    expect(error).toMatchObject({ code: 'ENOTFOUND' });
  });

  it('uses the system resolver without a lookup (localhost names aside)', async () => {
    await expect(checkTarget('http://127.0.0.1/', { allowPrivate: true })).resolves.toEqual({
      address: '127.0.0.1',
      family: 4,
    });
    await expect(checkTarget('http://localhost/', { allowPrivate: false })).rejects.toMatchObject({
      reason: 'loopback',
    });
  });

  it('with allowPrivate reaches loopback, private, link-local and CGNAT, but never metadata, unspecified or multicast', async () => {
    const open: OutboundPolicy = { allowPrivate: true, lookup: noLookup };
    for (const ip of [
      '127.0.0.1',
      '10.0.0.1',
      '192.168.1.20',
      '169.254.10.10',
      '100.64.0.1',
      '[fd12::1]',
      '[fe80::1]',
    ]) {
      await expect(checkTarget(`http://${ip}/`, open), ip).resolves.toMatchObject({});
    }
    for (const [ip, reason] of [
      ['169.254.169.254', 'link-local (cloud metadata)'],
      ['100.100.100.200', 'carrier-grade NAT (cloud metadata)'],
      ['[fd00:ec2::254]', 'private (cloud metadata)'],
      ['[::ffff:169.254.169.254]', 'link-local (cloud metadata, IPv4-mapped)'],
      ['0.0.0.0', 'unspecified'],
      ['224.0.0.1', 'multicast'],
      ['255.255.255.255', 'broadcast'],
    ] as const) {
      await expect(checkTarget(`http://${ip}/`, open), ip).rejects.toMatchObject({ reason });
    }
    const lookup = scriptedLookup(['10.0.0.7', '169.254.169.254']);
    await expect(checkTarget('http://metadata.internal/', { allowPrivate: true, lookup })).rejects.toMatchObject({
      address: '169.254.169.254',
    });
  });
});

describe('guardedFetch against a real server on 127.0.0.1', () => {
  let server: Server;
  let port: number;
  const received: Array<{ url: string; host: string; method: string; body: string }> = [];
  const fetches: GuardedFetch[] = [];

  /** A guarded fetch that is closed after the test. */
  const make = (policy: OutboundPolicy): GuardedFetch => {
    const f = guardedFetch(policy);
    fetches.push(f);
    return f;
  };

  const body = async (req: IncomingMessage): Promise<string> => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString('utf8');
  };

  beforeAll(async () => {
    server = createServer((req, res) => {
      void body(req).then((text) => {
        received.push({ url: req.url ?? '', host: req.headers.host ?? '', method: req.method ?? '', body: text });
        if (req.url === '/redirect') {
          res.writeHead(302, { location: '/target' }).end('moved');
        } else if (req.url === '/close') {
          res.writeHead(200, { connection: 'close' }).end('closing');
        } else {
          res.writeHead(200, { 'content-type': 'text/plain' }).end(`hello ${req.url}`);
        }
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  beforeEach(() => {
    received.length = 0;
  });
  afterEach(async () => {
    await Promise.all(fetches.splice(0).map((f) => f.close()));
  });

  it('refuses the server by default, and the server receives nothing', async () => {
    const f = make({ allowPrivate: false });
    for (const url of [
      `http://127.0.0.1:${port}/x`,
      `http://localhost:${port}/x`,
      `http://[::ffff:127.0.0.1]:${port}/`,
    ]) {
      const error = await f(url).catch((e: unknown) => e);
      expect(error, url).toBeInstanceOf(BlockedTargetError);
      expect((error as BlockedTargetError).reason, url).toMatch(/^loopback/);
    }
    expect(received).toEqual([]);
  });

  it('refuses a name whose lookup gives the server, and the server receives nothing', async () => {
    const lookup = scriptedLookup(['127.0.0.1']);
    const f = make({ allowPrivate: false, lookup });
    await expect(f(`http://mcp.example.test:${port}/`)).rejects.toMatchObject({
      host: 'mcp.example.test',
      address: '127.0.0.1',
      reason: 'loopback',
    });
    expect(lookup.calls).toEqual(['mcp.example.test']);
    expect(received).toEqual([]);
  });

  it('refuses at connect a name that rebinds to loopback after passing the check', async () => {
    const lookup = scriptedLookup(['1.1.1.1'], ['127.0.0.1']);
    const policy: OutboundPolicy = { allowPrivate: false, lookup };
    const url = `http://rebind.example.test:${port}/secret`;
    await expect(checkTarget(url, policy)).resolves.toEqual({ address: '1.1.1.1', family: 4 });
    const error = await make(policy)(url).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BlockedTargetError);
    expect(error).toMatchObject({ address: '127.0.0.1', reason: 'loopback' });
    expect(lookup.calls).toEqual(['rebind.example.test', 'rebind.example.test']);
    expect(received).toEqual([]);
  });

  it('reaches the server with allowPrivate, by address, by localhost and by a name the lookup gives it', async () => {
    const lookup = scriptedLookup(['127.0.0.1']);
    const f = make({ allowPrivate: true, lookup });
    const direct = await f(`http://127.0.0.1:${port}/direct`);
    expect(direct.status).toBe(200);
    expect(await direct.text()).toBe('hello /direct');
    const local = await f(`http://localhost:${port}/local`);
    expect(await local.text()).toBe('hello /local');
    // No resolver knows this name: reaching the server shows the socket went to the address the lookup checked.
    const named = await f(new URL(`http://mcp.example.test:${port}/named`));
    expect(await named.text()).toBe('hello /named');
    expect(lookup.calls).toEqual(['mcp.example.test']);
    expect(received.map((r) => [r.url, r.host])).toEqual([
      ['/direct', `127.0.0.1:${port}`],
      ['/local', `localhost:${port}`],
      ['/named', `mcp.example.test:${port}`],
    ]);
  });

  it('checks again at every new connection', async () => {
    const lookup = scriptedLookup(['127.0.0.1'], ['169.254.169.254']);
    const f = make({ allowPrivate: true, lookup });
    const first = await f(`http://pool.example.test:${port}/close`); // the server closes this connection
    expect(await first.text()).toBe('closing');
    await expect(f(`http://pool.example.test:${port}/again`)).rejects.toMatchObject({
      address: '169.254.169.254',
      reason: 'link-local (cloud metadata)',
    });
    expect(lookup.calls).toHaveLength(2);
    expect(received.map((r) => r.url)).toEqual(['/close']);
  });

  it('returns a 302 as it is and never follows it, whatever the caller asks', async () => {
    const f = make({ allowPrivate: true });
    for (const redirect of [undefined, 'follow', 'error'] as const) {
      const res = await f(`http://127.0.0.1:${port}/redirect`, redirect ? { redirect } : {});
      expect(res.status, redirect).toBe(302);
      expect(res.headers.get('location')).toBe('/target');
      await res.arrayBuffer();
    }
    expect(received.map((r) => r.url)).toEqual(['/redirect', '/redirect', '/redirect']);
  });

  it('sends a body, from init or from a Request', async () => {
    const f = make({ allowPrivate: true });
    const url = `http://127.0.0.1:${port}/post`;
    await (await f(url, { method: 'POST', body: '{"a":1}', headers: { 'content-type': 'application/json' } })).text();
    await (await f(new Request(url, { method: 'POST', body: 'from a request' }))).text();
    expect(received.map((r) => [r.method, r.body])).toEqual([
      ['POST', '{"a":1}'],
      ['POST', 'from a request'],
    ]);
  });

  it('refuses other schemes before anything is sent', async () => {
    const f = make({ allowPrivate: true });
    for (const url of ['file:///etc/passwd', 'data:,hello', `ftp://127.0.0.1:${port}/`]) {
      await expect(f(url), url).rejects.toBeInstanceOf(BlockedTargetError);
    }
    expect(received).toEqual([]);
  });

  it('refuses the metadata address even with allowPrivate, without connecting', async () => {
    const f = make({ allowPrivate: true });
    await expect(f('http://169.254.169.254/latest/meta-data/')).rejects.toMatchObject({
      address: '169.254.169.254',
      reason: 'link-local (cloud metadata)',
    });
  });

  it('lets a resolution failure reject as a failed fetch', async () => {
    const failing: Lookup = () => Promise.reject(Object.assign(new Error('ENOTFOUND'), { code: 'ENOTFOUND' }));
    const f = make({ allowPrivate: false, lookup: failing });
    const error = await f(`http://nx.example.test:${port}/`).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TypeError);
    expect(error).not.toBeInstanceOf(BlockedTargetError);
    expect((error as Error).cause).toMatchObject({ code: 'ENOTFOUND' });
  });
});
