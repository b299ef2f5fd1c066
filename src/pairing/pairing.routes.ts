import type { RouteDef } from '../http/route.js';
import type { AuthConfig } from '../config/config.schema.js';
import type { PairingService } from './pairing.service.js';

/** POST /pair (admin) and POST /pair/verify (api). */
export function pairingRoutes(deps: { service: PairingService; auth: AuthConfig }): RouteDef[] {
  void deps;
  return [];
}
