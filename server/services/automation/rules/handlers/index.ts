/** The table of rule handlers: name or alias -> handler. */
import { getServiceSnapshot } from "./get-service-snapshot.js";
import { sendEmail } from "./send-email.js";
import { sendToFileHost } from "./send-to-file-host.js";
import { serviceChange } from "./service-change.js";
import { serviceRangeToggle } from "./service-range-toggle.js";
import { serviceSendCommand } from "./service-send-command.js";
import { sleep } from "./sleep.js";
import type { Handler } from "./types.js";

export const HANDLERS: readonly Handler[] = [
  serviceChange,
  serviceRangeToggle,
  serviceSendCommand,
  sleep,
  getServiceSnapshot,
  sendToFileHost,
  sendEmail,
];

const BY_NAME = new Map<string, Handler>();
for (const h of HANDLERS) for (const n of [h.name, ...h.aliases]) BY_NAME.set(n, h);

/** The handler of a name or alias, or undefined. */
export function handler(name: string): Handler | undefined {
  return BY_NAME.get(name);
}

export type { ActionHandler, Handler, PreconditionHandler } from "./types.js";
