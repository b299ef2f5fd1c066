/**
 * Checks a user identity by the auth mode (DECISIONS §4) for any entry point
 * that carries a user: POST /message, the webhook sender, the WebSocket
 * identity. Resolves when allowed; throws ApiError 403 when not.
 */
export type IdentityCheck = (input: {
  platform: string;
  userId: string;
  /** Loopback peer with an accepted Host and loopback_trust on: skip the check. */
  loopbackTrusted: boolean;
  ip: string;
}) => Promise<void>;
