import type { Config } from '../config/config.schema.js';
import type { GatewayModule } from '../module.js';
import { pairingRoutes } from './pairing.routes.js';
import type { PairingService } from './pairing.service.js';

/** The pairing capability (DECISIONS §4): POST /pair and POST /pair/verify over the pairing service. */
export function pairingModule(service: PairingService, config: Config): GatewayModule {
  return { name: 'pairing', routes: pairingRoutes({ service, auth: config.gateway.auth }) };
}
