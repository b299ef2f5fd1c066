// The module hook of module-log.mjs (it runs on the hooks thread): records each ES module's URL as it loads.
import { appendFileSync } from 'node:fs';

let file = null;

export function initialize(data) {
  file = data.file;
}

export async function load(url, context, next) {
  if (file) appendFileSync(file, `${url}\n`);
  return next(url, context);
}
