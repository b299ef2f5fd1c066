import { endianness } from 'node:os';

/**
 * Embedding vectors as stored: unit length, float32, little-endian bytes
 * (`blob` on SQLite, `bytea` on PostgreSQL). Unit length makes cosine
 * similarity a plain dot product at query time.
 */

const LITTLE_ENDIAN = endianness() === 'LE';

/** `vector` scaled to unit length; a zero (or non-finite) vector gives null. */
export function normalizeVector(vector: readonly number[] | Float32Array): Float32Array | null {
  let sum = 0;
  for (const x of vector) sum += x * x;
  const norm = Math.sqrt(sum);
  if (!Number.isFinite(norm) || norm === 0) return null;
  const out = new Float32Array(vector.length);
  for (let i = 0; i < vector.length; i++) out[i] = vector[i]! / norm;
  return out;
}

/** The stored form: float32 little-endian bytes. */
export function encodeVector(vector: Float32Array): Buffer {
  if (LITTLE_ENDIAN) return Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength);
  const out = Buffer.alloc(vector.length * 4);
  vector.forEach((x, i) => out.writeFloatLE(x, i * 4));
  return out;
}

/** Reads a stored vector; null when the bytes are not a whole number of floats. */
export function decodeVector(bytes: Uint8Array): Float32Array | null {
  if (bytes.byteLength === 0 || bytes.byteLength % 4 !== 0) return null;
  const length = bytes.byteLength / 4;
  if (LITTLE_ENDIAN) {
    // Copy: the driver's buffer may not be 4-byte aligned.
    const copy = new Uint8Array(bytes.byteLength);
    copy.set(bytes);
    return new Float32Array(copy.buffer, 0, length);
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out = new Float32Array(length);
  for (let i = 0; i < length; i++) out[i] = view.getFloat32(i * 4, true);
  return out;
}

/** Dot product; for unit vectors, their cosine similarity. 0 when the dimensions differ. */
export function dot(a: Float32Array, b: Float32Array): number {
  if (a.length !== b.length) return 0;
  let sum = 0;
  for (let i = 0; i < a.length; i++) sum += a[i]! * b[i]!;
  return sum;
}
