/**
 * Load shedding (`limits.overload`, ADR 0043): new work the gateway cannot
 * take now — memory above the watermark, a late event loop, a turn queue that
 * would make it wait too long — is refused with 503 UNAVAILABLE and
 * `Retry-After`, rather than queued until memory or latency give way.
 */
export { openOverload, type Overload, type OverloadOptions, type ShedReason } from './overload.js';
export {
  SAMPLE_INTERVAL_MS,
  type LoadProbes,
  type LoadSample,
  type MemoryMeasure,
  type SampleTimers,
} from './load-sampler.js';
