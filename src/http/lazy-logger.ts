import type { FastifyBaseLogger } from 'fastify';

type Bindings = Parameters<FastifyBaseLogger['child']>[0];
type ChildOptions = Parameters<FastifyBaseLogger['child']>[1];
type LogArgs = Parameters<FastifyBaseLogger['info']>;

/**
 * A request's logger (`request.log`) that becomes the parent's child only
 * when something logs through it. Fastify makes one per request; a pino child
 * serialises its bindings (the request id, through the redaction) at once,
 * and almost every request logs nothing through it: the access line and the
 * error lines are written by the server's own logger with the request id.
 */
export class LazyChildLogger implements FastifyBaseLogger {
  #child: FastifyBaseLogger | undefined;

  constructor(
    private readonly parent: FastifyBaseLogger,
    private readonly bindings: Bindings,
    private readonly options: ChildOptions,
  ) {}

  /** The child, made on first use. */
  get real(): FastifyBaseLogger {
    return (this.#child ??= this.parent.child(this.bindings, this.options));
  }

  get level(): string {
    return this.#child?.level ?? this.options?.level ?? this.parent.level;
  }

  set level(level: string) {
    this.real.level = level;
  }

  fatal(...args: LogArgs): void {
    this.real.fatal(...args);
  }

  error(...args: LogArgs): void {
    this.real.error(...args);
  }

  warn(...args: LogArgs): void {
    this.real.warn(...args);
  }

  info(...args: LogArgs): void {
    this.real.info(...args);
  }

  debug(...args: LogArgs): void {
    this.real.debug(...args);
  }

  trace(...args: LogArgs): void {
    this.real.trace(...args);
  }

  silent(...args: LogArgs): void {
    this.real.silent(...args);
  }

  child(bindings: Bindings, options?: ChildOptions): FastifyBaseLogger {
    return this.real.child(bindings, options);
  }
}
