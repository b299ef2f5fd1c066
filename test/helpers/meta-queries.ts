import { prepared } from '../../src/store/prepared.js';

/** Prepared queries on `gateway_meta` that the store's tests run: a read by key and an upsert. */
export const byKey = prepared((ex, input: { key: string }) =>
  ex.selectFrom('gateway_meta').select(['key', 'value']).where('key', '=', input.key),
);

export const upsert = prepared((ex, input: { key: string; value: string; now: string }) =>
  ex
    .insertInto('gateway_meta')
    .values({ key: input.key, value: input.value, updated_at: input.now })
    .onConflict((oc) => oc.column('key').doUpdateSet({ value: input.value, updated_at: input.now })),
);
