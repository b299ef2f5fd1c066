import { randomBytes } from 'node:crypto';
import { existsSync, realpathSync } from 'node:fs';
import { chmod, mkdir, open, readFile, rename, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { Document, isMap, isScalar, parseDocument, YAMLMap } from 'yaml';
import { isPlainObject, type PlainObject } from '../config/config.merge.js';

/**
 * The configuration file as PUT /config edits it: the user's YAML document,
 * changed key by key so comments, order and untouched values stay as the
 * user wrote them, then replaced atomically (temp file, fsync, rename,
 * directory fsync) with mode 0600 because it may hold secrets.
 */

/** One edit of the file: set a key (objects created on the way) or remove it. */
export type FileEdit = { kind: 'set'; path: string[]; value: unknown } | { kind: 'delete'; path: string[] };

/** The file could not be read or parsed; the message never quotes its content. */
export class ConfigFileError extends Error {
  constructor(
    readonly path: string,
    reason: string,
  ) {
    super(`configuration file ${path}: ${reason}`);
    this.name = 'ConfigFileError';
  }
}

/** A configuration file loaded for editing. */
export interface EditableConfigFile {
  /** Where it will be written (symlinks resolved to their target). */
  readonly path: string;
  /** The parsed document; `applyFileEdits` changes it in place. */
  readonly document: Document;
  /** The text read from disk, or null when the file does not exist yet. */
  readonly originalText: string | null;
}

/**
 * Loads the configuration file at `path` for editing. When it does not exist,
 * the document starts from `fallback` (the file object read at start-up, or
 * `{}` for a file about to be created in `data_dir`).
 */
export async function openConfigFile(path: string, fallback: PlainObject): Promise<EditableConfigFile> {
  const target = existsSync(path) ? realpathSync(path) : path;
  let text: string;
  try {
    text = await readFile(target, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') {
      throw new ConfigFileError(target, `cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
    }
    const document = new Document(structuredClone(fallback));
    document.commentBefore = ' Gatehouse configuration (DECISIONS §1). Written by PUT /config; edit freely.';
    return { path: target, document, originalText: null };
  }
  const document = parseDocument(text);
  if (document.errors.length > 0) throw new ConfigFileError(target, 'is not valid YAML');
  if (document.contents !== null && !isMap(document.contents)) {
    throw new ConfigFileError(target, 'must hold a mapping');
  }
  return { path: target, document, originalText: text };
}

function rootMap(document: Document): YAMLMap {
  if (isMap(document.contents)) return document.contents;
  const map = new YAMLMap();
  document.contents = map;
  return map;
}

/** The map at `path`, creating maps (and replacing scalars such as `agent: ~`) on the way when `create`. */
function mapAt(document: Document, path: readonly string[], create: boolean): YAMLMap | null {
  let map = rootMap(document);
  for (const key of path) {
    const next: unknown = map.get(key, true);
    if (isMap(next)) {
      map = next;
    } else if (create) {
      const created = new YAMLMap();
      map.set(key, created);
      map = created;
    } else {
      return null;
    }
  }
  return map;
}

function isPrimitive(value: unknown): value is string | number | boolean {
  return typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean';
}

/**
 * Applies edits to the document in place. A scalar replaced by a scalar
 * keeps its node, so a trailing comment (`level: info # why`) survives.
 */
export function applyFileEdits(file: EditableConfigFile, edits: readonly FileEdit[]): void {
  const { document } = file;
  for (const edit of edits) {
    const parentPath = edit.path.slice(0, -1);
    const key = edit.path[edit.path.length - 1];
    if (key === undefined) continue;
    if (edit.kind === 'delete') {
      mapAt(document, parentPath, false)?.delete(key);
      continue;
    }
    const map = mapAt(document, parentPath, true)!;
    const existing: unknown = map.get(key, true);
    if (isScalar(existing) && isPrimitive(existing.value) && isPrimitive(edit.value)) {
      existing.value = edit.value;
    } else {
      map.set(key, document.createNode(edit.value));
    }
  }
}

/** The document's data as plain JSON (an empty file is `{}`). */
export function fileData(file: EditableConfigFile): PlainObject {
  const data: unknown = file.document.toJS();
  return isPlainObject(data) ? data : {};
}

/** The document as YAML text. */
export function fileText(file: EditableConfigFile): string {
  return file.document.toString();
}

/**
 * Writes `text` to `path` atomically: a temp file in the same directory
 * (created with `mode`), fsync, rename over the target, then fsync of the
 * directory so the rename itself survives a crash. Creates the directory
 * when missing. On failure the target is untouched and the temp file removed.
 */
export async function writeFileAtomic(path: string, text: string, mode = 0o600): Promise<void> {
  const dir = dirname(path);
  await mkdir(dir, { recursive: true });
  const temp = join(dir, `.${basename(path)}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
  try {
    const handle = await open(temp, 'wx', mode);
    try {
      await handle.writeFile(text, 'utf8');
      await handle.sync();
    } finally {
      await handle.close();
    }
    await chmod(temp, mode); // the umask may have cleared bits; 0600 is exact either way
    await rename(temp, path);
  } catch (err) {
    await rm(temp, { force: true });
    throw err;
  }
  try {
    const dirHandle = await open(dir, 'r');
    try {
      await dirHandle.sync();
    } finally {
      await dirHandle.close();
    }
  } catch {
    // Directory fsync is not supported everywhere; the file itself is already durable.
  }
}
