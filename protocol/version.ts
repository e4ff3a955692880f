/** The version of blockkit (package.json's), answered by the server and printed by `blockkit --version`. */
export const BLOCKKIT_VERSION = "0.1.0";
