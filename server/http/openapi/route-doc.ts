/**
 * How a route documents itself in the API reference: `schema: { ...doc({...}) }` with its summary,
 * description, tag, and its answers. The answers are kept under a key of their own (DOCS_KEY) that
 * only the generator reads (./operation.ts): a fastify `response` schema would serialise with it
 * (dropping unknown fields, coercing types) and so change what the service sends.
 */
import type { TSchema } from "@sinclair/typebox";

/** The key of a route schema that holds its answers for the reference only. */
export const DOCS_KEY = "x-blockkit-docs";

export const TAGS = {
  Devices: "Devices: list, read, command, rename, delete; last value and history.",
  "Sub-devices": "Extra stored values under a device: RF codes, SMS numbers, webhook actuators and sensors.",
  Callbacks: "One URL per device that the service POSTs each reading to (see the webhook `callbackDelivery`).",
  Blocks: "The hubs that report devices: activation, claim, list, unpair.",
  "Block events": "What a block sends (heartbeat, data, config) and the commands long-poll. Block token in X-Service-Token.",
  Camera: "Snapshots, on the stream listener ({stream_url}).",
  Rules: "Preconditions and actions run serially when triggered; suspend and unsuspend.",
  Account: "Who a credential belongs to; the user's service devices (Webhooks, SMS, File Host).",
  "Live stream": "A WebSocket of events about your own resources.",
  OAuth: "OAuth 2 authorization code grant for third-party applications.",
  Pages: "Server-rendered HTML on {auth_url}: sign-in, settings, dashboard. They work without JavaScript (except the dashboard) and post forms with a CSRF field.",
  Operations: "Health and metrics for probes and Prometheus.",
} as const;
export type Tag = keyof typeof TAGS;

/** One answer: what it means, and its body (JSON by default). */
export interface Answer {
  description: string;
  /** `data` of the success envelope (omit for the envelope alone). */
  data?: TSchema;
  /** `data` is present in some of these answers only. */
  dataOptional?: true;
  /** A body that is not the envelope (JSON unless `type` says otherwise). */
  body?: TSchema;
  /** Media type of a non-JSON body (image/jpeg, text/html…); its schema is then a string. */
  type?: string;
  /** No body at all (204, 303). */
  empty?: true;
  /** Response headers worth knowing. */
  headers?: Record<string, string>;
}

export interface RouteDoc {
  tag: Tag;
  summary: string;
  /** In our words: what it does, and the decisions where the spec is silent. Markdown. */
  description: string;
  /** Success answers by status. */
  ok: Record<number, Answer>;
  /** This route's own refusals by status, in our words; they override the common ones. */
  errors?: Record<number, string>;
  /** Overrides the security derived from `config.auth` (e.g. the optional credential of activation). */
  security?: Record<string, string[]>[];
  /** A body the route reads without a validating schema (forms, images): documented only. */
  body?: { schema: TSchema; types: string[] };
  /** Query parameters the route reads without a validating schema: documented only. */
  query?: TSchema;
  /** An HTML page: its refusals are pages too, not the envelope. */
  html?: true;
  deprecated?: true;
  /** The operation lives on the stream listener ({stream_url}). */
  streamListener?: true;
}

/** The part of a route's `schema` that documents it: spread it into the route's schema. */
export function doc(d: RouteDoc): Record<string, unknown> {
  return {
    summary: d.summary,
    description: d.description,
    tags: [d.tag],
    ...(d.deprecated ? { deprecated: true } : {}),
    [DOCS_KEY]: d,
  };
}

/** The documentation of an HTML page or form of {auth_url}: its answers and refusals are pages. */
export function pageDoc(d: Omit<RouteDoc, "tag" | "html" | "ok"> & { ok?: RouteDoc["ok"]; form?: TSchema }): Record<string, unknown> {
  const { form, ...rest } = d;
  return doc({
    tag: "Pages",
    ok: { 200: { description: "The page.", type: "text/html" } },
    ...rest,
    ...(form ? { body: { schema: form, types: ["application/x-www-form-urlencoded"] } } : {}),
    html: true,
  });
}

/** A form's answer: back to a page (or to sign-in without a session). */
export const SEE_OTHER: Answer = { description: "Done: on to the next page (or to sign-in without a session).", empty: true, headers: { location: "the next page" } };
