export { claimInstanceFile, InstanceTakenError, instanceIdOf } from './instance-id.js';
