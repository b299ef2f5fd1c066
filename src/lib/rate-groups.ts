/**
 * The four rate-limit groups (DECISIONS §4: read = GET, write = other methods, analytics = /analytics*,
 * lifecycle = channel reconnect/disable/enable, config PUT/PATCH, knowledge reindex), as a leaf: a route
 * declares its group without importing the limiter.
 */
export type RateGroup = 'read' | 'write' | 'analytics' | 'lifecycle';

/** Every rate group, in a fixed order. */
export const RATE_GROUPS: readonly RateGroup[] = ['read', 'write', 'analytics', 'lifecycle'];
