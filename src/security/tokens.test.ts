import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createTokenBook, extractToken, fingerprintToken, principalScope } from './tokens.js';

const sha = (s: string): string => createHash('sha256').update(s).digest('hex');

describe('fingerprintToken', () => {
  it('is tok_ + the first 8 hex of SHA-256', () => {
    expect(fingerprintToken('secret-token')).toBe(`tok_${sha('secret-token').slice(0, 8)}`);
    expect(fingerprintToken('secret-token')).toMatch(/^tok_[0-9a-f]{8}$/);
    expect(fingerprintToken('secret-token')).not.toContain('secret');
    expect(fingerprintToken('a')).not.toBe(fingerprintToken('b'));
  });
});

describe('principalScope', () => {
  it('is anonymous without a token, else the full SHA-256 hex', () => {
    expect(principalScope(null)).toBe('anonymous');
    expect(principalScope('')).toBe('anonymous');
    expect(principalScope('tkn')).toBe(sha('tkn'));
    expect(principalScope('tkn')).toHaveLength(64);
  });
});

describe('createTokenBook', () => {
  it('separates admin and api tokens when admin_tokens is set', () => {
    const book = createTokenBook({ apiTokens: ['api-1', 'api-2'], adminTokens: ['adm-1'] });
    expect(book.resolve('api-1')).toBe('api');
    expect(book.resolve('api-2')).toBe('api');
    expect(book.resolve('adm-1')).toBe('admin');
    expect(book.hasAnyToken()).toBe(true);
  });

  it('identify: the role with the fingerprint and idempotency scope of the same token; null when unknown', () => {
    const book = createTokenBook({ apiTokens: ['api-1'], adminTokens: ['adm-1'] });
    expect(book.identify('api-1')).toEqual({
      role: 'api',
      id: 'default',
      fingerprint: fingerprintToken('api-1'),
      scope: principalScope('api-1'),
    });
    expect(book.identify('adm-1')).toEqual({
      role: 'admin',
      id: 'default',
      fingerprint: fingerprintToken('adm-1'),
      scope: principalScope('adm-1'),
    });
    expect(book.identify('nope')).toBeNull();
    expect(book.identify('')).toBeNull();
  });

  it("a configured principal's tokens (raw or as SHA-256) name it and share one idempotency scope", () => {
    const hashed = createHash('sha256').update('alice-2').digest('hex');
    const book = createTokenBook({
      apiTokens: ['api-1'],
      adminTokens: [],
      extraAdminTokens: ['generated'],
      principals: [
        { id: 'alice', role: 'api', tokens: ['alice-1'], tokenSha256: [hashed] },
        { id: 'ops', role: 'admin', tokens: ['ops-1'], tokenSha256: [] },
      ],
    });
    expect(book.identify('alice-1')).toMatchObject({ role: 'api', id: 'alice', scope: 'principal:alice' });
    expect(book.identify('alice-2')).toMatchObject({ role: 'api', id: 'alice', scope: 'principal:alice' });
    expect(book.identify('ops-1')).toMatchObject({ role: 'admin', id: 'ops', scope: 'principal:ops' });
    expect(book.identify('generated')).toMatchObject({
      role: 'admin',
      id: 'admin',
      scope: principalScope('generated'),
    });
    expect(book.identify('api-1')).toMatchObject({ role: 'admin', id: 'default' });
    expect(book.identify(hashed)).toBeNull(); // the digest itself is not a token
  });

  it('falls back to api_tokens for admin rights when admin_tokens is empty (spec)', () => {
    const book = createTokenBook({ apiTokens: ['api-1', 'api-2'], adminTokens: [] });
    expect(book.resolve('api-1')).toBe('admin');
    expect(book.resolve('api-2')).toBe('admin');
  });

  it('a token in both lists is admin', () => {
    const book = createTokenBook({ apiTokens: ['both'], adminTokens: ['both', 'other'] });
    expect(book.resolve('both')).toBe('admin');
  });

  it('extra (generated) admin tokens are always admin and do not disturb the fallback', () => {
    const onlyExtra = createTokenBook({ apiTokens: [], adminTokens: [], extraAdminTokens: ['generated'] });
    expect(onlyExtra.resolve('generated')).toBe('admin');
    expect(onlyExtra.hasAnyToken()).toBe(true);

    const withApi = createTokenBook({ apiTokens: ['api-1'], adminTokens: ['adm'], extraAdminTokens: ['generated'] });
    expect(withApi.resolve('generated')).toBe('admin');
    expect(withApi.resolve('api-1')).toBe('api');
  });

  it('unknown, empty and near-miss tokens resolve to null', () => {
    const book = createTokenBook({ apiTokens: ['api-1'], adminTokens: ['adm-1'] });
    expect(book.resolve('nope')).toBeNull();
    expect(book.resolve('')).toBeNull();
    expect(book.resolve('api-1 ')).toBeNull();
    expect(book.resolve('API-1')).toBeNull();
    expect(book.resolve('api-')).toBeNull();
  });

  it('with nothing configured, nothing resolves and hasAnyToken is false', () => {
    const book = createTokenBook({ apiTokens: [], adminTokens: [] });
    expect(book.hasAnyToken()).toBe(false);
    expect(book.resolve('anything')).toBeNull();
  });
});

describe('extractToken', () => {
  it('reads the default X-API-Token header case-insensitively', () => {
    expect(extractToken({ 'x-api-token': 'abc' }, 'X-API-Token')).toEqual({ token: 'abc', via: 'header' });
    expect(extractToken({ 'X-Api-Token': ' abc ' }, 'X-API-Token')).toEqual({ token: 'abc', via: 'header' });
  });

  it('reads a custom header name', () => {
    const headers = { 'x-gatehouse-key': 'k1', 'x-api-token': 'ignored' };
    expect(extractToken(headers, 'X-Gatehouse-Key')).toEqual({ token: 'k1', via: 'header' });
  });

  it('accepts Authorization: Bearer with any scheme case', () => {
    expect(extractToken({ authorization: 'Bearer abc' }, 'X-API-Token')).toEqual({ token: 'abc', via: 'bearer' });
    expect(extractToken({ authorization: 'bearer abc' }, 'X-API-Token')).toEqual({ token: 'abc', via: 'bearer' });
    expect(extractToken({ Authorization: 'BEARER   abc  ' }, 'X-API-Token')).toEqual({ token: 'abc', via: 'bearer' });
  });

  it('the configured header wins over Bearer when both are present', () => {
    expect(extractToken({ 'x-api-token': 'h', authorization: 'Bearer b' }, 'X-API-Token')).toEqual({
      token: 'h',
      via: 'header',
    });
    // an empty configured header falls through to Bearer
    expect(extractToken({ 'x-api-token': '  ', authorization: 'Bearer b' }, 'X-API-Token')).toEqual({
      token: 'b',
      via: 'bearer',
    });
  });

  it('token_header: Authorization means Bearer', () => {
    expect(extractToken({ authorization: 'Bearer abc' }, 'Authorization')).toEqual({ token: 'abc', via: 'bearer' });
    expect(extractToken({ authorization: 'abc' }, 'Authorization')).toBeNull();
  });

  it('empty, malformed or missing values → null', () => {
    expect(extractToken({}, 'X-API-Token')).toBeNull();
    expect(extractToken({ 'x-api-token': '' }, 'X-API-Token')).toBeNull();
    expect(extractToken({ 'x-api-token': undefined }, 'X-API-Token')).toBeNull();
    expect(extractToken({ authorization: 'Bearer' }, 'X-API-Token')).toBeNull();
    expect(extractToken({ authorization: 'Bearer   ' }, 'X-API-Token')).toBeNull();
    expect(extractToken({ authorization: 'Basic dXNlcjpwYXNz' }, 'X-API-Token')).toBeNull();
    expect(extractToken({ authorization: 'Bearer a b' }, 'X-API-Token')).toBeNull();
    expect(extractToken({ authorization: 'Bearerabc' }, 'X-API-Token')).toBeNull();
  });

  it('array values: one distinct value is used, conflicting values are refused', () => {
    expect(extractToken({ 'x-api-token': ['abc'] }, 'X-API-Token')).toEqual({ token: 'abc', via: 'header' });
    expect(extractToken({ 'x-api-token': ['abc', 'abc'] }, 'X-API-Token')).toEqual({ token: 'abc', via: 'header' });
    expect(extractToken({ 'x-api-token': ['abc', 'def'] }, 'X-API-Token')).toBeNull();
    expect(extractToken({ 'x-api-token': [] }, 'X-API-Token')).toBeNull();
  });

  it('never reads a token from the URL', () => {
    const headers = { ':path': '/api/v1/sessions?token=abc', url: '/x?token=abc' };
    expect(extractToken(headers, 'X-API-Token')).toBeNull();
  });
});
