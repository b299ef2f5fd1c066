import { randomBytes } from 'node:crypto';
import type { Clock } from './clock.js';

const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz'; // Crockford base32, lower case

function encodeTime(ms: number): string {
  let out = '';
  let value = ms;
  for (let i = 0; i < 10; i++) {
    out = ALPHABET[value % 32]! + out;
    value = Math.floor(value / 32);
  }
  return out;
}

function encodeRandom(length: number): string {
  const bytes = randomBytes(length);
  let out = '';
  for (let i = 0; i < length; i++) out += ALPHABET[bytes[i]! % 32]!;
  return out;
}

/** Generates identifiers. */
export interface IdGenerator {
  /** A new opaque id `<prefix>_<time><random>`; ids sort by creation time. */
  next(prefix: string): string;
}

/**
 * Time-sortable ids: 10 base32 characters of milliseconds then 16 random
 * characters (80 bits). Within one millisecond the random part is
 * incremented so ids from one generator stay strictly ordered.
 */
export function createIdGenerator(clock: Clock): IdGenerator {
  let lastTime = -1;
  let lastRandom = '';
  return {
    next(prefix: string): string {
      const now = clock.now();
      let random: string;
      if (now === lastTime) {
        random = increment(lastRandom);
      } else {
        random = encodeRandom(16);
        lastTime = now;
      }
      lastRandom = random;
      return `${prefix}_${encodeTime(now)}${random}`;
    },
  };
}

function increment(value: string): string {
  const chars = value.split('');
  for (let i = chars.length - 1; i >= 0; i--) {
    const index = ALPHABET.indexOf(chars[i]!);
    if (index < 31) {
      chars[i] = ALPHABET[index + 1]!;
      return chars.join('');
    }
    chars[i] = ALPHABET[0]!;
  }
  return encodeRandom(value.length);
}
