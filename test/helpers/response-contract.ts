/**
 * The response contract (ADR 0016): every answer the in-process gateway
 * gives in a test is checked against the OpenAPI document it serves — the
 * status must be declared for its operation, the content type too, and a JSON
 * body must match the declared schema (Ajv, JSON Schema 2020-12, OpenAPI
 * 3.1's dialect). The harness attaches `watchResponses` to every gateway it
 * builds and throws the violations on `close()`, so the test that produced a
 * drifting answer fails, naming the operation, the status and the schema
 * error. Routes that declare no `responses` yet are skipped (the document
 * gives them a generic 200); streams (SSE) bypass Fastify's `onSend` and are
 * not checked here.
 */
import { appendFileSync } from 'node:fs';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import type { Config } from '../../src/config/config.schema.js';
import { buildOpenApi, openApiPath, operationIdOf, type Json } from '../../src/http/openapi.js';
import type { RouteDef } from '../../src/http/route.js';
import { packageVersion } from '../../src/lib/version.js';
import { concreteRoutes, type HttpApp } from '../../src/http/server.js';

/** One answer as the checker sees it. */
export interface ObservedResponse {
  /** The document's path (`/api/v1/sessions/{session_id}`) and lower-case method. */
  path: string;
  method: string;
  status: number;
  /** The `content-type` header as sent, or undefined. */
  contentType: string | undefined;
  /** The body as sent (empty for none). */
  body: string;
  /** The `x-request-id` header as sent. */
  requestId: string | undefined;
  /** The `retry-after` header as sent. */
  retryAfter: string | undefined;
}

const DOC_ID = 'https://gatehouse.invalid/openapi.json';

/** JSON Pointer escaping of one segment. */
const pointer = (segment: string): string => segment.replace(/~/g, '~0').replace(/\//g, '~1');

/** Checks observed answers against one OpenAPI document. */
export class ContractChecker {
  private readonly ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
  private readonly validators = new Map<string, ValidateFunction>();

  constructor(readonly document: Json) {
    this.ajv.addSchema({ ...document, $id: DOC_ID });
  }

  /** The operation id of a path and method, or null when the document has none. */
  operationId(path: string, method: string): string | null {
    const operation = this.operation(path, method);
    return typeof operation?.operationId === 'string' ? operation.operationId : null;
  }

  private operation(path: string, method: string): Json | undefined {
    return ((this.document.paths as Record<string, Json> | undefined)?.[path]?.[method] ?? undefined) as
      Json | undefined;
  }

  /** The violations of one answer (empty when it matches the document). */
  check(observed: ObservedResponse): string[] {
    const { path, method, status } = observed;
    const operation = this.operation(path, method);
    const name = `${method.toUpperCase()} ${path}${operation ? ` (${String(operation.operationId)})` : ''} → ${status}`;
    if (!operation) return [`${name}: no such operation in the document`];
    const problems: string[] = [];
    if (!observed.requestId) problems.push(`${name}: no X-Request-Id header`);
    if (status === 429 && !observed.retryAfter) problems.push(`${name}: 429 without Retry-After`);
    const responses = operation.responses as Record<string, Json>;
    let response = responses[String(status)];
    let location = `#/paths/${pointer(path)}/${method}/responses/${status}`;
    if (!response)
      return [
        ...problems,
        `${name}: status ${status} is not declared (declared: ${Object.keys(responses).join(', ')})`,
      ];
    if (typeof response.$ref === 'string') {
      location = response.$ref;
      response = this.resolve(response.$ref);
    }
    const content = response.content as Record<string, { schema?: Json }> | undefined;
    if (!content) {
      if (observed.body.length > 0)
        problems.push(`${name}: declared without a body, answered ${observed.body.length} bytes`);
      return problems;
    }
    const media = (observed.contentType ?? '').split(';')[0]!.trim().toLowerCase();
    if (!content[media]) {
      return [
        ...problems,
        `${name}: content type "${media}" is not declared (declared: ${Object.keys(content).join(', ')})`,
      ];
    }
    if (media !== 'application/json') return problems;
    let body: unknown;
    try {
      body = JSON.parse(observed.body);
    } catch {
      return [...problems, `${name}: the body is not JSON`];
    }
    const validate = this.validator(`${location}/content/${pointer(media)}/schema`);
    if (!validate(body)) {
      const errors = (validate.errors ?? [])
        .slice(0, 5)
        .map((e) => `${e.instancePath || '(body)'} ${e.message ?? ''}${e.params ? ` ${JSON.stringify(e.params)}` : ''}`)
        .join('; ');
      problems.push(
        `${name}: body does not match the declared schema: ${errors}; body: ${observed.body.slice(0, 400)}`,
      );
    }
    return problems;
  }

  private resolve(ref: string): Json {
    let node: unknown = this.document;
    for (const segment of ref.replace(/^#\//, '').split('/')) {
      node = (node as Json)[segment.replace(/~1/g, '/').replace(/~0/g, '~')];
    }
    return node as Json;
  }

  private validator(location: string): ValidateFunction {
    let validate = this.validators.get(location);
    if (!validate) {
      validate = this.ajv.compile({ $ref: `${DOC_ID}${location}` });
      this.validators.set(location, validate);
    }
    return validate;
  }
}

/** Checkers of the documents seen in this worker: most gateways of a test file serve the same one. */
const checkers = new Map<string, ContractChecker>();

/** The checker of `document`, shared with earlier gateways that served the same document. */
function checkerOf(document: Json): ContractChecker {
  const text = JSON.stringify(document);
  let checker = checkers.get(text);
  if (!checker) {
    if (checkers.size >= 8) checkers.clear();
    checker = new ContractChecker(document);
    checkers.set(text, checker);
  }
  return checker;
}

/** The document the gateway of `config` serves for `routes` (what GET /openapi.json answers). */
export function documentOf(routes: RouteDef[], config: Config): Json {
  return buildOpenApi(routes, {
    apiPrefix: config.gateway.api_prefix,
    version: packageVersion(),
    rateLimited: config.security.profile !== 'minimal',
    tokenHeader: config.gateway.auth.token_header,
  });
}

/** What `watchResponses` collected for one gateway. */
export interface ResponseWatch {
  /** Violations so far, each naming the operation, the status and the problem. */
  readonly violations: string[];
  /** `operationId status` of every checked answer. */
  readonly seen: Set<string>;
  /** Removes and returns the violations (a test that provokes one on purpose). */
  take(): string[];
}

/**
 * Checks every answer of `app` (before it is ready) against the document of
 * `routes`. The document and its validators are built on the first answer.
 * With `GATEHOUSE_CONTRACT_SEEN=<file>` every checked `operationId status`
 * is appended to that file (coverage of a whole run).
 */
export function watchResponses(app: HttpApp, routes: () => RouteDef[], config: Config): ResponseWatch {
  const byUrl = new Map<string, RouteDef>();
  let checker: ContractChecker | null = null;
  const seenFile = process.env.GATEHOUSE_CONTRACT_SEEN;
  const watch: ResponseWatch = {
    violations: [],
    seen: new Set(),
    take() {
      return this.violations.splice(0);
    },
  };
  app.addHook('onSend', async (request, reply, payload) => {
    const url = request.routeOptions.url;
    if (url === undefined) return payload;
    if (!checker) {
      for (const { method, url: concrete, route } of concreteRoutes(routes(), config.gateway.api_prefix)) {
        byUrl.set(`${method} ${concrete}`, route);
      }
      checker = checkerOf(documentOf(routes(), config));
    }
    const route = byUrl.get(`${request.method} ${url}`);
    // Unknown routes (OPTIONS preflight) and routes that declare nothing yet are not checked.
    if (!route?.responses) return payload;
    if (typeof payload !== 'string' && !Buffer.isBuffer(payload) && payload !== null && payload !== undefined) {
      return payload; // a stream
    }
    const path = openApiPath(route, config.gateway.api_prefix);
    const method = request.method.toLowerCase();
    const header = (name: string): string | undefined => {
      const value = reply.getHeader(name);
      return value === undefined ? undefined : String(value);
    };
    const status = reply.statusCode;
    watch.violations.push(
      ...checker.check({
        path,
        method,
        status,
        contentType: header('content-type'),
        // 204 and 304 carry no body whatever the handler passed.
        body: payload === null || payload === undefined || status === 204 || status === 304 ? '' : payload.toString(),
        requestId: header('x-request-id'),
        retryAfter: header('retry-after'),
      }),
    );
    const seen = `${operationIdOf(route, config.gateway.api_prefix)} ${status}`;
    if (seenFile && !watch.seen.has(seen)) appendFileSync(seenFile, seen + '\n');
    watch.seen.add(seen);
    return payload;
  });
  return watch;
}

/** Throws every violation `watch` holds (and clears them), one per line. */
export function assertNoViolations(watch: ResponseWatch): void {
  const violations = watch.take();
  if (violations.length === 0) return;
  throw new Error(
    `${violations.length} response(s) do not match the OpenAPI document (docs/adr/0016-openapi-contract.md):\n` +
      violations.map((v) => `  - ${v}`).join('\n'),
  );
}
