/**
 * The dashboard pages (docs/dashboard.md): `/dashboard`, `/dashboard/device/<GUID>`,
 * `/dashboard/blocks`, `/dashboard/rules`. Each is a small server-rendered shell on the settings
 * pages' login; plain ES modules from `web/dashboard/` (no build step) fill it from the REST API,
 * signed by the session cookie plus the CSRF token of the page's meta tag, and keep it live from
 * the stream. uPlot comes from node_modules through this server: no request leaves it.
 */
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { SEE_OTHER, pageDoc } from "../openapi/route-doc.js";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { notFound } from "../../errors.js";
import type { Services } from "../../services/index.js";
import { csrfFor, loginRedirect, session } from "./context.js";
import { type Html, contentSecurityPolicy, frame, html, sendHtml } from "./layout.js";

/** The folder of the dashboard's modules: `web/dashboard` beside server/ (sources) or dist/ (built). */
function webDir(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    const candidate = join(dir, "web", "dashboard");
    if (existsSync(candidate)) return candidate;
    dir = dirname(dir);
  }
  throw new Error("web/dashboard not found beside the server's code");
}

interface Asset {
  type: string;
  body: Buffer;
}

/** Every file the pages may load, read once at start. */
function loadAssets(): Map<string, Asset> {
  const dir = webDir();
  const require = createRequire(import.meta.url);
  const out = new Map<string, Asset>();
  const js = "text/javascript; charset=utf-8";
  for (const name of ["common.js", "devices.js", "device.js", "blocks.js", "rules.js", "chart.js"]) {
    out.set(name, { type: js, body: readFileSync(join(dir, name)) });
  }
  out.set("dashboard.css", { type: "text/css; charset=utf-8", body: readFileSync(join(dir, "dashboard.css")) });
  out.set("uPlot.js", { type: js, body: readFileSync(require.resolve("uplot/dist/uPlot.esm.js")) });
  out.set("uPlot.css", { type: "text/css; charset=utf-8", body: readFileSync(require.resolve("uplot/dist/uPlot.min.css")) });
  return out;
}

/**
 * The settings pages' policy plus what the dashboard needs: its own scripts (`script-src 'self'`)
 * and the REST API and the stream on this origin (`connect-src 'self'`; Chromium and Firefox match
 * ws: of the same host with 'self'). Still no inline script or style and no other host.
 */
export function dashboardPolicy(): string {
  return `${contentSecurityPolicy()}; script-src 'self'; connect-src 'self'`;
}

const PAGES: Record<string, { title: string; script: string }> = {
  devices: { title: "Devices", script: "devices.js" },
  device: { title: "Device", script: "device.js" },
  blocks: { title: "Blocks", script: "blocks.js" },
  rules: { title: "Rules", script: "rules.js" },
};

function shell(page: keyof typeof PAGES, csrf: string, userName: string, data: Record<string, string> = {}): Html {
  const p = PAGES[page] as { title: string; script: string };
  const link = (href: string, label: string, key: string) =>
    html`<a href="${href}"${key === page || (key === "devices" && page === "device") ? html` aria-current="page"` : ""}>${label}</a>`;
  const head = html`<meta name="csrf-token" content="${csrf}">
<link rel="stylesheet" href="/dashboard/assets/dashboard.css">
${page === "device" ? html`<link rel="stylesheet" href="/dashboard/assets/uPlot.css">` : ""}
<script type="module" src="/dashboard/assets/${p.script}"></script>`;
  const attrs = Object.entries(data).map(([k, v]) => html` data-${k}="${v}"`);
  return frame({
    title: p.title,
    head,
    user: { name: userName, csrf },
    body: html`<nav class="tabs" aria-label="Dashboard">${link("/dashboard", "Devices", "devices")}${link("/dashboard/blocks", "Blocks", "blocks")}${link("/dashboard/rules", "Rules", "rules")}${link("/settings", "Settings", "settings")}</nav>
<p id="live" class="muted" role="status" aria-live="polite">Connecting…</p>
<div id="app"${attrs}><p class="muted">Loading…</p></div>
<noscript><p class="error">The dashboard needs JavaScript; the settings pages work without it.</p></noscript>`,
  });
}

export function dashboardRoutes(app: FastifyInstance, s: Services): void {
  const assets = loadAssets();
  app.get(
    "/dashboard/assets/:name",
    {
      schema: pageDoc({
        summary: "The dashboard's scripts and styles",
        description: "Served from the server itself (uPlot from its npm package): the dashboard loads nothing from another origin. Cached 5 minutes.",
        ok: { 200: { description: "The asset (JavaScript or CSS).", type: "text/javascript" } },
        errors: { 404: "No such asset." },
      }),
    },
    async (request, reply) => {
    const a = assets.get((request.params as { name: string }).name);
    if (!a) throw notFound("no such dashboard asset");
    return reply.type(a.type).header("cache-control", "public, max-age=300").send(a.body);
  });

  const render = async (request: FastifyRequest, reply: FastifyReply, page: keyof typeof PAGES, data?: Record<string, string>) => {
    const sess = await session(s, request);
    if (!sess) return loginRedirect(reply, request.url);
    const user = await s.store.users.byId(sess.userId);
    void reply.header("content-security-policy", dashboardPolicy());
    return sendHtml(reply, 200, shell(page, csrfFor(s, request, reply, sess), user?.name ?? "", data));
  };
  const view = (summary: string, description: string) =>
    pageDoc({
      summary,
      description: `${description} Needs JavaScript; reads the REST API and the live stream with the session cookie. Without a session: redirects to sign-in.`,
      ok: { 200: { description: "The page.", type: "text/html" }, 303: SEE_OTHER },
    });
  app.get("/dashboard", { schema: view("Dashboard: devices", "Your devices with their last values, updated live.") }, (request, reply) => render(request, reply, "devices"));
  app.get("/dashboard/blocks", { schema: view("Dashboard: blocks", "Your blocks, and blocks awaiting activation that you can claim.") }, (request, reply) => render(request, reply, "blocks"));
  app.get("/dashboard/rules", { schema: view("Dashboard: rules", "Your rules with their last runs; suspend and unsuspend.") }, (request, reply) => render(request, reply, "rules"));
  app.get(
    "/dashboard/device/:guid",
    {
      schema: {
        ...view("Dashboard: one device", "A device's value, history chart, command box and sub-devices."),
        params: { type: "object", properties: { guid: { type: "string", maxLength: 256 } } },
      },
    },
    (request, reply) =>
    render(request, reply, "device", { guid: (request.params as { guid: string }).guid }),
  );
}
