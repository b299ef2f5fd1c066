import { gatewayInternals, type Gateway, type GatewayInternals } from '../../src/gateway.js';

/**
 * The gateway's internals a test reaches into (message path, store, channels,
 * audit log…), as opposed to its public handle (`app`, `listen`, `shutdown`,
 * `config`, `logger`, `firstStart`). Every test goes through here.
 */
export function internals(gateway: Gateway): GatewayInternals {
  return gatewayInternals(gateway);
}
