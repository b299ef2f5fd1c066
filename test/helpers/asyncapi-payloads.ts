/**
 * Checks recorded stream payloads against the AsyncAPI document the
 * gateway serves: each message of `components.messages` is compiled once
 * with Ajv (draft-07, the AsyncAPI schema format's base).
 */
import { Ajv, type ValidateFunction } from 'ajv';

/** The part of the AsyncAPI document these checks read. */
export interface AsyncApiDoc {
  components: { messages: Record<string, { name: string; payload: Record<string, unknown> }> };
  channels: Record<string, { messages: Record<string, { $ref: string }> }>;
}

/** Validates payloads by channel and message name (SSE event name, or frame `type`). */
export interface PayloadChecker {
  /** The schema errors of `payload` as the message `name` of `channel` (empty when it is valid); throws for an undocumented name. */
  errors(channel: string, name: string, payload: unknown): string[];
}

/** Compiles the message payload schemas of `doc`. */
export function payloadChecker(doc: AsyncApiDoc): PayloadChecker {
  const ajv = new Ajv({ allErrors: true, strict: false });
  const compiled = new Map<string, ValidateFunction>();
  const lookup = (channel: string, name: string): ValidateFunction[] => {
    const refs = Object.values(doc.channels[channel]?.messages ?? {});
    const found: ValidateFunction[] = [];
    for (const { $ref } of refs) {
      const key = $ref.replace('#/components/messages/', '');
      const message = doc.components.messages[key];
      if (!message || message.name !== name) continue;
      let validate = compiled.get(key);
      if (!validate) {
        validate = ajv.compile(message.payload);
        compiled.set(key, validate);
      }
      found.push(validate);
    }
    if (found.length === 0) throw new Error(`channel ${channel} documents no message named ${name}`);
    return found;
  };
  return {
    errors(channel, name, payload) {
      const out: string[] = [];
      for (const validate of lookup(channel, name)) {
        if (validate(payload)) return [];
        out.push(...(validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message ?? ''}`));
      }
      return out;
    },
  };
}
