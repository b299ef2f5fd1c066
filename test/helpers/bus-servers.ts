/**
 * The bus servers tests run against (ADR 0025): Redis and NATS, each probed
 * once when first imported. It reads the test-only environment variables
 * GATEHOUSE_TEST_REDIS_URL (default redis://127.0.0.1:6379),
 * GATEHOUSE_TEST_NATS_URL (default nats://127.0.0.1:4222) and
 * GATEHOUSE_REQUIRE_BUS (1: an unreachable server fails the suites instead
 * of skipping them).
 */
import { randomBytes } from 'node:crypto';
import { connect, createServer } from 'node:net';

/** One bus server to run a suite against. */
export interface TestBusServer {
  driver: 'redis' | 'nats';
  url: string;
  host: string;
  port: number;
  /** True when the suite should be skipped (unreachable and not required). */
  skip: boolean;
  /** Why it is skipped, for the suite title; null when it runs. */
  skipReason: string | null;
}

const required = process.env.GATEHOUSE_REQUIRE_BUS === '1';

async function probe(driver: 'redis' | 'nats', url: string): Promise<TestBusServer> {
  const parsed = new URL(url);
  const host = parsed.hostname;
  const port = Number(parsed.port || (driver === 'redis' ? 6379 : 4222));
  const problem = await new Promise<string | null>((resolve) => {
    const socket = connect(port, host);
    socket.setTimeout(2_000, () => {
      socket.destroy();
      resolve('timed out');
    });
    socket.once('connect', () => {
      socket.destroy();
      resolve(null);
    });
    socket.once('error', (err) => resolve(err.message));
  });
  if (problem !== null && !required) {
    console.warn(`[bus tests] ${driver} not reachable at ${host}:${port} (${problem}): its cases are SKIPPED.`);
  }
  const skip = problem !== null && !required;
  return { driver, url, host, port, skip, skipReason: skip ? `${driver} not reachable at ${host}:${port}` : null };
}

const servers = await Promise.all([
  probe('redis', process.env.GATEHOUSE_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379'),
  probe('nats', process.env.GATEHOUSE_TEST_NATS_URL ?? 'nats://127.0.0.1:4222'),
]);

/** Redis and NATS, each marked `skip` when unreachable (unless GATEHOUSE_REQUIRE_BUS=1). */
export function testBusServers(): TestBusServer[] {
  return servers;
}

/** A namespace of its own, so concurrent suites on one server never hear each other. */
export function testNamespace(): string {
  return `ghtest_${randomBytes(6).toString('hex')}`;
}

/** A port nothing listens on (bound, then released). */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (!address || typeof address === 'string') throw new Error('no port');
  return address.port;
}
