/**
 * The one interface of rule handlers. A precondition watches one device and says whether an event
 * makes it true and whether it holds; an action does one thing in a run. Adding a handler is adding
 * a module that exports one of these and listing it in `index.ts`.
 */
import type { DeviceRow } from "../../../../store/types.js";
import type { Snapshot } from "../../camera.js";

export type Params = Record<string, unknown>;

export interface ValidationContext {
  /** Where the handler sits, e.g. `actions[1] (sendEmail)`, for error messages. */
  where: string;
  /** The user's device named by `params[field]`, or a 400 naming the field and the GUID. */
  device(field: string): Promise<DeviceRow>;
  /** `params[field]` as a string (numbers accepted) or a 400 when missing. */
  text(field: string, opts?: { max?: number; optional?: boolean }): string | undefined;
  /** `params[field]` as a finite number (numeric strings accepted) or a 400. */
  number(field: string, opts?: { min?: number; max?: number }): number;
}

export interface PreconditionHandler {
  kind: "precondition";
  name: string;
  /** Names of the original platform accepted on input, stored as `name`. */
  aliases: readonly string[];
  /** Checks and normalises params; throws a 400 naming the problem. */
  validate(params: Params, ctx: ValidationContext): Promise<Params>;
  /** The device GUID watched (the engine's index key). */
  guid(params: Params): string;
  /** Whether an event taking the device from `prev` to `cur` makes the precondition true. */
  triggers(params: Params, prev: string | undefined, cur: string): boolean;
  /** Whether the precondition holds while the device's value is `cur`. */
  holds(params: Params, cur: string | undefined): boolean;
}

/** What actions may use; the engine supplies it per run. */
export interface ActionDeps {
  sendCommand(userId: number, guid: string, da: string): Promise<void>;
  snapshot(userId: number, guid: string, signal: AbortSignal): Promise<Snapshot>;
  sendMail(mail: { to: string; subject: string; text: string; attachment?: Snapshot }): Promise<string>;
  storeFile(fileHost: DeviceRow, name: string, snapshot: Snapshot, signal: AbortSignal): Promise<string>;
  device(userId: number, guid: string): Promise<DeviceRow>;
}

export interface RunContext {
  userId: number;
  deps: ActionDeps;
  /** Left by earlier actions of the same run for later ones (getServiceSnapshot -> sendToFileHost). */
  carry: { snapshot?: Snapshot };
  signal: AbortSignal;
}

export interface ActionHandler {
  kind: "action";
  name: string;
  aliases: readonly string[];
  validate(params: Params, ctx: ValidationContext): Promise<Params>;
  /** Does the action; resolves with a short account of what it did; throws to stop the run. */
  run(params: Params, ctx: RunContext): Promise<string>;
}

export type Handler = PreconditionHandler | ActionHandler;
