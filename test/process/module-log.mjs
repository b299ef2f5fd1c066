// Records every module a process loads to the file named by GATEHOUSE_MODULE_LOG, one URL a line: ES modules
// through a module hook, CommonJS ones (and Node's built-ins required from them) through `Module._load`. The
// start-up tests run the built `gatehouse` with `node --import` of this file.
import { appendFileSync } from 'node:fs';
import Module, { register } from 'node:module';
import { pathToFileURL } from 'node:url';

const file = process.env.GATEHOUSE_MODULE_LOG;
if (file) {
  register('./module-log.hooks.mjs', import.meta.url, { data: { file } });
  const load = Module._load;
  Module._load = function (request, parent, isMain) {
    const exports = load.call(this, request, parent, isMain);
    try {
      const resolved = Module._resolveFilename(request, parent, isMain);
      appendFileSync(file, `${resolved.startsWith('/') ? pathToFileURL(resolved).href : resolved}\n`);
    } catch {
      /* not a file: nothing to record */
    }
    return exports;
  };
}
