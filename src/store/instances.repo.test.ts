import type { Kysely } from 'kysely';
import { afterEach, beforeEach, expect, it } from 'vitest';
import type { Database } from './database.js';
import { heartbeat, liveInstances, liveOwners, registerInstance, removeInstance } from './instances.repo.js';
import { type TestStore, describeBackends } from '../../test/helpers/stores.js';

const BASE = Date.UTC(2026, 10, 21, 10, 0, 0, 0);
const at = (seconds: number): string => new Date(BASE + seconds * 1000).toISOString();

describeBackends('gateway instances repository', (backend) => {
  let t: TestStore;
  let db: Kysely<Database>;

  beforeEach(async () => {
    t = await backend.open();
    db = t.store.db;
  });
  afterEach(async () => {
    await t.cleanup();
  });

  it('tracks live instances by heartbeat', async () => {
    await registerInstance(db, 'gw_b', at(0));
    await registerInstance(db, 'gw_a', at(0));
    await registerInstance(db, 'gw_c', at(0));
    expect(await liveInstances(db, at(0))).toEqual(['gw_a', 'gw_b', 'gw_c']);

    expect(await heartbeat(db, 'gw_a', at(30))).toBe(true);
    expect(await heartbeat(db, 'gw_c', at(20))).toBe(true);
    expect(await liveInstances(db, at(20))).toEqual(['gw_a', 'gw_c']); // at the boundary is live
    expect(await liveInstances(db, at(21))).toEqual(['gw_a']);
  });

  it('heartbeat of an unknown instance is false; re-registering resets it', async () => {
    expect(await heartbeat(db, 'gw_x', at(0))).toBe(false);
    await registerInstance(db, 'gw_x', at(0));
    await registerInstance(db, 'gw_x', at(50));
    const rows = await db.selectFrom('gateway_instances').selectAll().execute();
    expect(rows).toEqual([{ id: 'gw_x', started_at: at(50), heartbeat_at: at(50) }]);
  });

  it('removeInstance forgets it', async () => {
    await registerInstance(db, 'gw_a', at(0));
    expect(await removeInstance(db, 'gw_a')).toBe(true);
    expect(await removeInstance(db, 'gw_a')).toBe(false);
    expect(await liveInstances(db, at(0))).toEqual([]);
    expect(await heartbeat(db, 'gw_a', at(1))).toBe(false);
  });

  it('liveOwners: self alone on an unshared database, else self and every live instance once', async () => {
    await registerInstance(db, 'gw_b', at(0));
    await registerInstance(db, 'gw_a', at(30));
    await registerInstance(db, 'gw_self', at(30));
    const expected = backend.name === 'sqlite' ? ['gw_self'] : ['gw_self', 'gw_a'];
    expect(await liveOwners(t.store, 'gw_self', at(10))).toEqual(expected);
    // Self counts even when it is not registered (or its heartbeat is stale).
    expect(await liveOwners(t.store, 'gw_new', at(60))).toEqual(['gw_new']);
    expect(await liveOwners(t.store, 'gw_b', at(0))).toEqual(
      backend.name === 'sqlite' ? ['gw_b'] : ['gw_b', 'gw_a', 'gw_self'],
    );
  });
});
