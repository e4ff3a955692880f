/** The block agent: public API for the gateway daemon and the simulator. */
export type { ActivationEnd } from "./activator.js";
export { BlockAgent, type AgentState, type AgentStats, type BackoffLoop, type BlockAgentOptions } from "./agent.js";
export type { SnapshotSource } from "./router.js";
export { Backoff, type BackoffOptions, sleep } from "./backoff.js";
export { MemoryOutbox, MemoryTokenStore } from "./memory.js";
export { SqliteOutbox, type SqliteOutboxOptions } from "./sqlite-outbox.js";
export { FileTokenStore } from "./token-file.js";
export * from "./types.js";
export type { SendWindow, UplinkOptions } from "./uplink.js";
