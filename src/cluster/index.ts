export { instanceIdOf } from './instance-id.js';
export { instanceLockEvents } from './instance-events.js';
