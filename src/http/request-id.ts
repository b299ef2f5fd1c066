import { randomUUID } from 'node:crypto';

/** A client id is echoed when it is 1..200 printable ASCII characters (DECISIONS §2). */
const PRINTABLE = /^[\x20-\x7e]{1,200}$/;

/** The request id for a request: the client's when acceptable, else a new `req_` id. */
export function requestIdFor(header: string | string[] | undefined): string {
  const value = Array.isArray(header) ? header[0] : header;
  if (value !== undefined && PRINTABLE.test(value) && value.trim() !== '') return value;
  return `req_${randomUUID().replace(/-/g, '')}`;
}
