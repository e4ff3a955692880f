/**
 * Server-rendered HTML: an escaping template tag, the shared page frame and the security headers.
 * Every interpolated value is escaped unless it is already `Html` built by the same tag.
 */
import type { FastifyReply } from "fastify";

export class Html {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

const ESC: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

export function esc(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ESC[c] ?? c);
}

function part(v: unknown): string {
  if (v instanceof Html) return v.value;
  if (Array.isArray(v)) return v.map(part).join("");
  if (v === null || v === undefined || v === false) return "";
  return esc(String(v));
}

export function html(strings: TemplateStringsArray, ...values: unknown[]): Html {
  let out = strings[0] ?? "";
  values.forEach((v, i) => {
    out += part(v) + (strings[i + 1] ?? "");
  });
  return new Html(out);
}

/** Epoch ms as `YYYY-MM-DD HH:MM UTC`. */
export function when(ms: number): string {
  return `${new Date(ms).toISOString().slice(0, 16).replace("T", " ")} UTC`;
}

export interface FrameOptions {
  title: string;
  body: Html;
  /** The signed-in user's name and the CSRF field of the logout form. */
  user?: { name: string; csrf: string } | undefined;
  /** Extra elements of `<head>` (the dashboard's stylesheet, scripts and CSRF meta). */
  head?: Html | undefined;
}

export function frame(o: FrameOptions): Html {
  const nav = o.user
    ? html`<nav><span>Signed in as <strong>${o.user.name}</strong></span>
<form method="post" action="/auth/logout" class="inline"><input type="hidden" name="csrf" value="${o.user.csrf}"><button type="submit" class="link">Sign out</button></form></nav>`
    : html``;
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${o.title} · blockkit</title>
<link rel="stylesheet" href="/assets/style.css">
<link rel="icon" href="/assets/icon.svg" type="image/svg+xml">
${o.head ?? ""}
</head>
<body>
<header><a class="brand" href="/settings">blockkit</a>${nav}</header>
<main>
<h1>${o.title}</h1>
${o.body}
</main>
</body>
</html>
`;
}

/** The hidden CSRF input every form carries. */
export function csrfInput(token: string): Html {
  return html`<input type="hidden" name="csrf" value="${token}">`;
}

/** Content-Security-Policy of the pages. `formTargets`: extra origins a form may post or redirect to. */
export function contentSecurityPolicy(formTargets: string[] = []): string {
  const forms = ["'self'", ...formTargets].join(" ");
  return [
    "default-src 'none'",
    "style-src 'self'",
    "img-src 'self'",
    `form-action ${forms}`,
    "frame-ancestors 'none'",
    "base-uri 'none'",
  ].join("; ");
}

/** The headers of every page, redirect and page error. Pages are never cached: they carry secrets. */
export function securityHeaders(reply: FastifyReply): void {
  if (!reply.hasHeader("content-security-policy")) void reply.header("content-security-policy", contentSecurityPolicy());
  void reply.header("x-frame-options", "DENY");
  void reply.header("x-content-type-options", "nosniff");
  void reply.header("referrer-policy", "no-referrer");
  void reply.header("cross-origin-opener-policy", "same-origin");
  if (!reply.hasHeader("cache-control")) void reply.header("cache-control", "no-store");
}

export function sendHtml(reply: FastifyReply, status: number, doc: Html): FastifyReply {
  return reply.code(status).type("text/html; charset=utf-8").send(doc.value);
}
