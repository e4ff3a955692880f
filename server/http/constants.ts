/** Constants of the HTTP layer, in a module of their own so that every part can import them without cycles. */
export const REST_PREFIX = "/rest/v0";
export const JSON_BODY_LIMIT = 64 * 1024;
/** Largest camera snapshot upload (DESIGN.md "Limits"): the image/jpeg parser's limit and the stream listener's body limit. */
export const SNAPSHOT_BODY_LIMIT = 10 * 1024 * 1024;
