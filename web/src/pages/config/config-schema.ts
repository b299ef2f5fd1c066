/**
 * The configuration's JSON Schema, as the API publishes it (`components.schemas.Config` of GET
 * /openapi.json), read for what the form needs at each key: the allowed words of an enum (a `<select>`), the
 * types (checkbox, number, text), whether `null` (the default) is allowed, and the default. Read once per
 * client and kept; when it cannot be read, the form falls back to the types of the values themselves.
 */
import type { GatehouseClient } from '../../../../client/index.js';
import { isObject, type Path } from './config-model';

/** The part of JSON Schema the form reads. */
export interface JsonSchema {
  type?: string | string[];
  enum?: unknown[];
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  properties?: Record<string, JsonSchema>;
  additionalProperties?: boolean | JsonSchema;
  default?: unknown;
  description?: string;
  $ref?: string;
}

/** What the schema says of one key. */
export interface KeySchema {
  /** The JSON types allowed (`string`, `integer`, `number`, `boolean`, `array`, `object`), `null` apart. */
  types: ReadonlySet<string>;
  /** The allowed words, when the key is an enum of strings. */
  options?: readonly string[];
  /** True when `null` (not set: the default applies) is allowed. */
  nullable: boolean;
  default?: unknown;
  /** What the key is for, when the schema says. */
  description?: string;
}

/** Follows a local `$ref` (`#/components/schemas/X`) within `document`. */
function resolve(document: unknown, schema: JsonSchema | undefined): JsonSchema | undefined {
  let current = schema;
  for (let hops = 0; current?.$ref !== undefined && hops < 16; hops++) {
    const ref = current.$ref;
    if (!ref.startsWith('#/')) return undefined;
    let node: unknown = document;
    for (const part of ref.slice(2).split('/')) {
      node = isObject(node) ? node[part.replace(/~1/g, '/').replace(/~0/g, '~')] : undefined;
    }
    current = isObject(node) ? node : undefined;
  }
  return current;
}

/** The configuration's schema with its document (for `$ref`s). */
export interface ConfigSchema {
  document: unknown;
  root: JsonSchema;
}

/** The schema at `path`: object properties, then the entries of maps (`provider.pricing.<model>`). */
function schemaAt(schema: ConfigSchema, path: Path): JsonSchema | undefined {
  let node = resolve(schema.document, schema.root);
  for (const key of path) {
    if (!node) return undefined;
    const members = [node, ...(node.anyOf ?? []), ...(node.oneOf ?? [])].map((m) => resolve(schema.document, m));
    let next: JsonSchema | undefined;
    for (const member of members) {
      const property = member?.properties?.[key];
      if (property) next = property;
      else if (!next && isObject(member?.additionalProperties)) next = member.additionalProperties;
    }
    node = resolve(schema.document, next);
  }
  return node;
}

/** What the schema says of the key at `path`, or undefined when it does not describe it. */
export function keySchema(schema: ConfigSchema | undefined, path: Path): KeySchema | undefined {
  if (!schema) return undefined;
  const node = schemaAt(schema, path);
  if (!node) return undefined;
  const types = new Set<string>();
  const words: unknown[] = [];
  let nullable = false;
  let enumerated = false;
  const visit = (member: JsonSchema | undefined) => {
    const resolved = resolve(schema.document, member);
    if (!resolved) return;
    const listed = resolved.type === undefined ? [] : Array.isArray(resolved.type) ? resolved.type : [resolved.type];
    for (const type of listed) {
      if (type === 'null') nullable = true;
      else types.add(type);
    }
    if (Array.isArray(resolved.enum)) {
      enumerated = true;
      for (const word of resolved.enum) {
        if (word === null) nullable = true;
        else words.push(word);
      }
    }
    for (const inner of [...(resolved.anyOf ?? []), ...(resolved.oneOf ?? [])]) visit(inner);
  };
  visit(node);
  const options = enumerated && words.length > 0 && words.every((word) => typeof word === 'string') ? words : undefined;
  return {
    types,
    nullable,
    ...(options ? { options } : {}),
    ...('default' in node ? { default: node.default } : {}),
    ...(typeof node.description === 'string' ? { description: node.description } : {}),
  };
}

const cache = new WeakMap<GatehouseClient, Promise<ConfigSchema | undefined>>();

/**
 * The configuration's schema from the API's OpenAPI document, read once per client. Answers undefined (and
 * forgets the attempt, so a later load asks again) when the document cannot be read or has no `Config`.
 */
export function loadConfigSchema(api: GatehouseClient): Promise<ConfigSchema | undefined> {
  let pending = cache.get(api);
  if (!pending) {
    pending = api.GET('/api/v1/openapi.json').then(
      ({ data }) => {
        const components: unknown = data?.components;
        const schemas = isObject(components) ? components.schemas : undefined;
        const root = isObject(schemas) ? schemas.Config : undefined;
        if (!isObject(root)) {
          cache.delete(api);
          return undefined;
        }
        return { document: data, root: root };
      },
      () => {
        cache.delete(api);
        return undefined;
      },
    );
    cache.set(api, pending);
  }
  return pending;
}
