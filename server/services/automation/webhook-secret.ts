/**
 * The signing secret of a webhook actuator: derived from the server's session key and the
 * sub-device (HMAC-SHA256), so nothing more is stored and the owner can be shown it again. Calls
 * are signed like callbacks: `X-Blockkit-Signature: sha256=<HMAC of the raw body>` and a unique
 * `X-Blockkit-Delivery`.
 */
import { createHmac } from "node:crypto";

export function webhookSecret(key: Buffer, deviceId: number, sid: string): string {
  return createHmac("sha256", key).update(`webhook-actuator:${deviceId}:${sid}`).digest("base64url");
}
