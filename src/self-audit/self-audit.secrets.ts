/**
 * How strong a token or secret is (ADR 0023): the self-audit's rules for
 * `auth.token_*` and `webhook.secret_weak`. Pure functions of the value; the
 * checks that name the weak ones live in self-audit.config.ts.
 */

/**
 * Values that are guessed first: placeholders from examples and common
 * passwords, compared lower-cased without punctuation and trailing digits
 * (`Change-Me`, `change_me2` and `PASSWORD123` all match).
 */
const WELL_KNOWN = new Set([
  'changeme',
  'changethis',
  'replaceme',
  'secret',
  'mysecret',
  'supersecret',
  'topsecret',
  'password',
  'passw0rd',
  'pass',
  'test',
  'testing',
  'testtoken',
  'token',
  'mytoken',
  'apitoken',
  'admintoken',
  'yourtoken',
  'yourapitoken',
  'yoursecret',
  'admin',
  'root',
  'default',
  'example',
  'sample',
  'demo',
  'dev',
  'devtoken',
  'letmein',
  'qwerty',
  'gatehouse',
  'webhook',
  'webhooksecret',
  'whsec',
  'todo',
  'xxx',
  'abc',
]);

/** Below this many characters a token is short (`auth.token_short`). */
export const MIN_TOKEN_LENGTH = 32;
/** Below this many characters a short token is critical: few enough to guess online. */
export const CRITICAL_TOKEN_LENGTH = 16;
/** Fewer distinct characters than this is too little variety. */
export const MIN_DISTINCT_CHARACTERS = 8;
/** Standard Webhooks keys (`whsec_` + base64) shorter than this many bytes are short (the spec asks 24–64). */
export const MIN_WHSEC_BYTES = 24;

/** What is wrong with a secret, worst first; null when nothing is. */
export type SecretWeakness = 'well_known' | 'short' | 'low_variety';

/** True when the text is a shorter unit repeated (`abcabcabc`, `xyxyxyxy`). */
function isRepetition(text: string): boolean {
  for (let period = 1; period <= text.length / 2; period++) {
    if (text.length % period !== 0) continue;
    if (text.slice(0, period).repeat(text.length / period) === text) return true;
  }
  return false;
}

/** True for `123456`, `12345678`, `0123456789`…: digits counting up, the commonest password shape. */
function isCountingRun(text: string): boolean {
  return /^\d+$/.test(text) && '01234567890123456789'.includes(text);
}

/**
 * Judges a token or secret: `well_known` (a placeholder or common password),
 * `short` (fewer than `minLength` characters), `low_variety` (fewer than 8
 * distinct characters, or one unit repeated), else null. Only the worst
 * weakness is returned.
 */
export function judgeSecret(value: string, minLength: number = MIN_TOKEN_LENGTH): SecretWeakness | null {
  const alphanumeric = value.toLowerCase().replace(/[^a-z0-9]/g, '');
  const word = alphanumeric.replace(/\d+$/, '');
  if (alphanumeric === '' || WELL_KNOWN.has(word) || isCountingRun(alphanumeric)) return 'well_known';
  if (value.length < minLength) return 'short';
  if (new Set(value).size < MIN_DISTINCT_CHARACTERS || isRepetition(value)) return 'low_variety';
  return null;
}

/** How a webhook secret's length is measured: the decoded key of a `whsec_` secret, else the characters. */
export function webhookSecretWeakness(secret: string): SecretWeakness | null {
  if (secret.startsWith('whsec_')) {
    const key = secret.slice('whsec_'.length);
    const bytes = Buffer.from(key, 'base64').length;
    if (key === '' || judgeSecret(key, 0) === 'well_known') return 'well_known';
    if (bytes < MIN_WHSEC_BYTES) return 'short';
    return judgeSecret(key, 0);
  }
  return judgeSecret(secret);
}
