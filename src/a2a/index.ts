/** The Agent2Agent protocol (DECISIONS §22): agent cards and JSON-RPC at /a2a, every task a turn of the ledger. */
export { a2aModule, type A2AModuleDeps } from './a2a.module.js';
export { A2A_PLATFORM } from './a2a.handler.js';
