import { describe, expect, it } from 'vitest';
import {
  DEFAULT_LOOPBACK_HOSTS,
  allowedHostsWarning,
  createHostPolicy,
  createOriginPolicy,
  isHostAllowed,
  isLoopbackHost,
  isLoopbackPeer,
  isOriginAllowed,
  isWildcardHostEntry,
  normalizeHost,
  normalizeOrigin,
  type HostPolicy,
} from './host-origin.js';

describe('normalizeHost', () => {
  it.each([
    ['localhost', 'localhost'],
    ['  LocalHost  ', 'localhost'],
    ['Codex.Example.com:58123', 'codex.example.com'],
    ['127.0.0.1:58123', '127.0.0.1'],
    ['::1', '[::1]'],
    ['[::1]', '[::1]'],
    ['[::1]:58123', '[::1]'],
    ['[2001:DB8::1]:80', '[2001:db8::1]'],
    ['2001:db8::1', '[2001:db8::1]'],
    ['2001:DB8:0:0:0:0:0:1', '[2001:db8::1]'],
    ['[0:0:0:0:0:0:0:1]', '[::1]'],
    ['::', '[::]'],
    ['example.com:', 'example.com'],
  ])('%j → %j', (input, expected) => {
    expect(normalizeHost(input)).toBe(expected);
  });

  it.each(['', '   ', '[::1', '[::1]x', 'example.com:abc', 'exa mple.com', 'evil.com/path', 'user@host', '[nothex]'])(
    'rejects %j',
    (input) => {
      expect(normalizeHost(input)).toBeNull();
    },
  );
});

describe('isWildcardHostEntry', () => {
  it.each(['0.0.0.0', '::', '[::]', '', '  ', '0.0.0.0:80'])('%j is a wildcard', (entry) => {
    expect(isWildcardHostEntry(entry)).toBe(true);
  });
  it.each(['localhost', '127.0.0.1', '[::1]', 'example.com'])('%j is not a wildcard', (entry) => {
    expect(isWildcardHostEntry(entry)).toBe(false);
  });
});

describe('isLoopbackHost (bind address)', () => {
  it.each([
    '127.0.0.1',
    '127.0.0.2',
    '127.255.255.254',
    '::1',
    '[::1]',
    'localhost',
    'LOCALHOST',
    '0:0:0:0:0:0:0:1',
    '[::ffff:127.0.0.1]',
  ])('%j is loopback', (bind) => {
    expect(isLoopbackHost(bind)).toBe(true);
  });
  it.each([
    '',
    '0.0.0.0',
    '::',
    '[::]',
    '192.168.1.10',
    '10.0.0.1',
    'example.com',
    'my.localhost',
    '128.0.0.1',
    '127.0.0',
  ])('%j is not loopback', (bind) => {
    expect(isLoopbackHost(bind)).toBe(false);
  });
});

describe('isLoopbackPeer (socket address)', () => {
  it.each(['127.0.0.1', '127.0.0.2', '::1', '::ffff:127.0.0.1', '::FFFF:127.1.2.3', '[::1]'])(
    '%j is loopback',
    (peer) => {
      expect(isLoopbackPeer(peer)).toBe(true);
    },
  );
  it.each([undefined, '', '10.0.0.1', '::ffff:10.0.0.1', '2001:db8::1', 'localhost', '::'])(
    '%j is not loopback',
    (peer) => {
      expect(isLoopbackPeer(peer)).toBe(false);
    },
  );
});

describe('createHostPolicy + isHostAllowed: spec Host table', () => {
  it('row 1: allowed_hosts has usable entries → only those entries', () => {
    const policy = createHostPolicy(['codex.example.com', '0.0.0.0'], '127.0.0.1');
    expect(policy).toEqual({ kind: 'list', hosts: new Set(['codex.example.com']) });
    expect(isHostAllowed('codex.example.com', policy)).toBe(true);
    expect(isHostAllowed('Codex.Example.com:58123', policy)).toBe(true);
    // The loopback defaults are not added when a list is configured.
    expect(isHostAllowed('localhost', policy)).toBe(false);
    expect(isHostAllowed('127.0.0.1:58123', policy)).toBe(false);
    expect(isHostAllowed('evil.example.com', policy)).toBe(false);
  });

  it('row 1 with a non-loopback bind: still only the entries', () => {
    const policy = createHostPolicy(['Gateway.Internal:443'], '0.0.0.0');
    expect(policy.kind).toBe('list');
    expect(isHostAllowed('gateway.internal', policy)).toBe(true);
    expect(isHostAllowed('localhost', policy)).toBe(false);
  });

  it('row 2: empty list, loopback bind → localhost, 127.0.0.1, [::1]', () => {
    const policy = createHostPolicy([], '127.0.0.1');
    expect(policy).toEqual({ kind: 'loopback' });
    expect([...DEFAULT_LOOPBACK_HOSTS].sort()).toEqual(['127.0.0.1', '[::1]', 'localhost']);
    for (const host of [
      'localhost',
      'localhost:58123',
      '127.0.0.1',
      '127.0.0.1:58123',
      '[::1]',
      '[::1]:58123',
      '::1',
    ]) {
      expect(isHostAllowed(host, policy), host).toBe(true);
    }
    for (const host of ['example.com', '127.0.0.2', '127.0.0.2:58123', '0.0.0.0', '[::]', '192.168.0.1']) {
      expect(isHostAllowed(host, policy), host).toBe(false);
    }
  });

  it('row 2 for every loopback bind form', () => {
    for (const bind of ['127.0.0.2', '::1', '[::1]', 'localhost']) {
      expect(createHostPolicy([], bind), bind).toEqual({ kind: 'loopback' });
    }
  });

  it('row 3: empty list, non-loopback bind → none; all Hosts rejected', () => {
    for (const bind of ['0.0.0.0', '::', '', '192.168.1.10', 'gateway.example.com']) {
      const policy = createHostPolicy([], bind);
      expect(policy, bind).toEqual({ kind: 'none' });
      for (const host of ['localhost', '127.0.0.1', '[::1]', 'gateway.example.com', '192.168.1.10']) {
        expect(isHostAllowed(host, policy), `${bind} / ${host}`).toBe(false);
      }
    }
  });

  it('127.0.0.2 is loopback as a bind host but not in the default Host set', () => {
    const policy = createHostPolicy([], '127.0.0.2');
    expect(isLoopbackHost('127.0.0.2')).toBe(true);
    expect(policy.kind).toBe('loopback');
    expect(isHostAllowed('127.0.0.2', policy)).toBe(false);
    expect(isHostAllowed('127.0.0.1', policy)).toBe(true);
  });

  it('a wildcard-only list counts as not configured', () => {
    const wildcards = ['0.0.0.0', '::', ''];
    expect(createHostPolicy(wildcards, '127.0.0.1')).toEqual({ kind: 'loopback' });
    expect(createHostPolicy(wildcards, '0.0.0.0')).toEqual({ kind: 'none' });
    expect(isHostAllowed('0.0.0.0', createHostPolicy(wildcards, '0.0.0.0'))).toBe(false);
    expect(allowedHostsWarning(wildcards)).toMatch(/treated as not configured/);
    expect(allowedHostsWarning([])).toBeNull();
    expect(allowedHostsWarning(['::', 'localhost'])).toBeNull();
  });

  it('IPv6 entries match every spelling of the same address', () => {
    const policy = createHostPolicy(['2001:DB8::1', '[fd00::5]:8443'], '::');
    expect(policy).toEqual({ kind: 'list', hosts: new Set(['[2001:db8::1]', '[fd00::5]']) });
    expect(isHostAllowed('[2001:db8::1]:58123', policy)).toBe(true);
    expect(isHostAllowed('[2001:db8:0:0::1]', policy)).toBe(true);
    expect(isHostAllowed('[fd00::5]', policy)).toBe(true);
    expect(isHostAllowed('[fd00::6]', policy)).toBe(false);
  });

  it('an empty or missing Host is untrusted', () => {
    const policies: HostPolicy[] = [
      createHostPolicy([], '127.0.0.1'),
      createHostPolicy(['example.com'], '127.0.0.1'),
      createHostPolicy([], '0.0.0.0'),
    ];
    for (const policy of policies) {
      expect(isHostAllowed(undefined, policy)).toBe(false);
      expect(isHostAllowed('', policy)).toBe(false);
      expect(isHostAllowed('   ', policy)).toBe(false);
    }
  });
});

describe('normalizeOrigin', () => {
  it.each([
    ['http://localhost:58123', 'http://localhost:58123'],
    ['HTTP://LocalHost:58123', 'http://localhost:58123'],
    ['http://example.com:80', 'http://example.com'],
    ['https://example.com:443', 'https://example.com'],
    ['https://example.com:80', 'https://example.com:80'],
    ['http://example.com:443', 'http://example.com:443'],
    ['https://app.example.com/', 'https://app.example.com'],
    ['http://[::1]:58123', 'http://[::1]:58123'],
    ['http://[2001:DB8::1]', 'http://[2001:db8::1]'],
  ])('%j → %j', (input, expected) => {
    expect(normalizeOrigin(input)).toBe(expected);
  });

  it.each([
    'null',
    '',
    '*',
    'example.com',
    'ftp://example.com',
    'file:///etc/passwd',
    'http:example.com',
    'http://',
    'https://a.com/path',
    'https://u:p@a.com',
    'https://a.com?x=1',
  ])('rejects %j', (input) => {
    expect(normalizeOrigin(input)).toBeNull();
  });
});

describe('createOriginPolicy', () => {
  it('normalizes entries and drops * and empty ones', () => {
    const policy = createOriginPolicy(['https://App.Example.com:443/', '*', '', 'not a url', 'http://localhost:3000']);
    expect([...policy.origins].sort()).toEqual(['http://localhost:3000', 'https://app.example.com']);
    expect(policy.dropped).toEqual(['*', 'not a url']);
  });
});

describe('isOriginAllowed', () => {
  const loopback = createHostPolicy([], '127.0.0.1');
  const listed = createOriginPolicy(['https://dashboard.example.com']);

  it('no Origin header → allowed', () => {
    expect(isOriginAllowed(undefined, { policy: listed, hostHeader: undefined, hostPolicy: { kind: 'none' } })).toBe(
      true,
    );
  });

  it('a listed Origin → allowed (normalized before comparing)', () => {
    const ctx = { policy: listed, hostHeader: 'localhost:58123', hostPolicy: loopback };
    expect(isOriginAllowed('https://dashboard.example.com', ctx)).toBe(true);
    expect(isOriginAllowed('HTTPS://Dashboard.Example.com:443', ctx)).toBe(true);
    expect(isOriginAllowed('http://dashboard.example.com', ctx)).toBe(false);
    expect(isOriginAllowed('https://dashboard.example.com:8443', ctx)).toBe(false);
  });

  it('an https Origin is not the own origin of a gateway reached directly on loopback', () => {
    const empty = createOriginPolicy([]);
    expect(
      isOriginAllowed('https://127.0.0.1:58123', {
        policy: empty,
        hostHeader: '127.0.0.1:58123',
        hostPolicy: loopback,
      }),
    ).toBe(false);
  });

  it("the gateway's own origin → allowed when its Host passes", () => {
    const empty = createOriginPolicy([]);
    expect(
      isOriginAllowed('http://localhost:58123', { policy: empty, hostHeader: 'localhost:58123', hostPolicy: loopback }),
    ).toBe(true);
    expect(
      isOriginAllowed('http://[::1]:58123', { policy: empty, hostHeader: '[::1]:58123', hostPolicy: loopback }),
    ).toBe(true);
    expect(
      isOriginAllowed('http://127.0.0.1:58123', { policy: empty, hostHeader: '127.0.0.1:58123', hostPolicy: loopback }),
    ).toBe(true);
    const list = createHostPolicy(['gw.example.com'], '0.0.0.0');
    // default ports: Origin without port vs Host with the default port, and the reverse
    expect(
      isOriginAllowed('https://gw.example.com', { policy: empty, hostHeader: 'gw.example.com:443', hostPolicy: list }),
    ).toBe(true);
    expect(
      isOriginAllowed('https://gw.example.com:443', { policy: empty, hostHeader: 'GW.example.com', hostPolicy: list }),
    ).toBe(true);
    expect(
      isOriginAllowed('http://gw.example.com', { policy: empty, hostHeader: 'gw.example.com:80', hostPolicy: list }),
    ).toBe(true);
  });

  it('own origin with a Host that fails the Host policy → rejected', () => {
    const empty = createOriginPolicy([]);
    // Origin equals Host, but Host is not in the loopback set (DNS rebinding shape)
    expect(
      isOriginAllowed('http://evil.example:58123', {
        policy: empty,
        hostHeader: 'evil.example:58123',
        hostPolicy: loopback,
      }),
    ).toBe(false);
    // non-loopback bind with no allowed_hosts → every Host fails
    expect(
      isOriginAllowed('http://10.0.0.5:58123', {
        policy: empty,
        hostHeader: '10.0.0.5:58123',
        hostPolicy: { kind: 'none' },
      }),
    ).toBe(false);
  });

  it('a different port or scheme than the Host → rejected', () => {
    const empty = createOriginPolicy([]);
    expect(
      isOriginAllowed('http://localhost:3000', { policy: empty, hostHeader: 'localhost:58123', hostPolicy: loopback }),
    ).toBe(false);
    expect(
      isOriginAllowed('http://localhost', { policy: empty, hostHeader: 'localhost:58123', hostPolicy: loopback }),
    ).toBe(false);
    expect(
      isOriginAllowed('https://localhost', { policy: empty, hostHeader: 'localhost:80', hostPolicy: loopback }),
    ).toBe(false);
    expect(
      isOriginAllowed('http://127.0.0.1:58123', { policy: empty, hostHeader: 'localhost:58123', hostPolicy: loopback }),
    ).toBe(false);
  });

  it('the literal null, an empty value and a missing Host → rejected', () => {
    const empty = createOriginPolicy([]);
    const ctx = { policy: empty, hostHeader: 'localhost:58123', hostPolicy: loopback };
    expect(isOriginAllowed('null', ctx)).toBe(false);
    expect(isOriginAllowed('', ctx)).toBe(false);
    expect(isOriginAllowed('http://localhost:58123', { ...ctx, hostHeader: undefined })).toBe(false);
    expect(isOriginAllowed('http://localhost:58123', { ...ctx, hostHeader: '' })).toBe(false);
  });
});
