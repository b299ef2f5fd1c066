/** Pairing capability (spec: Pairing; DECISIONS §4): single-use codes, verification with lockout, paired identities. */
export { pairingRoutes } from './pairing.routes.js';
export {
  createPairingService,
  PAIRING_CODE_ALPHABET,
  PAIRING_CODE_LENGTH,
  PAIRING_LOCKOUT_SECONDS,
  PAIRING_MAX_FAILURES,
  type PairingService,
  type PairingServiceOptions,
  type VerifyResult,
} from './pairing.service.js';
export { pairingModule } from './pairing.module.js';
