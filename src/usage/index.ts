/** Usage: one row per model call (tokens and nano-USD cost), written by the message path, read by analytics. */
export { recordUsage, recordUsageOnce, spentNanoUsdSince, usageRow, type UsageInput } from './usage.repo.js';
