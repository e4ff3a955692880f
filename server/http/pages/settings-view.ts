/** The settings page's HTML, from a model gathered by settings.ts. */
import type { AppView, Grant } from "../../services/accounts/oauth.js";
import type { BlockRow, TokenRow } from "../../store/types.js";
import { type Html, csrfInput, frame, html, when } from "./layout.js";

/** A one-time message: a secret shown once, a notice, or a problem with the last form. */
export type Flash =
  | { kind: "secret"; title: string; items: { label: string; value: string }[] }
  | { kind: "notice"; text: string }
  | { kind: "error"; text: string };

export interface SettingsModel {
  userName: string;
  csrf: string;
  personal: TokenRow | null;
  vblock: TokenRow | null;
  webhook: boolean;
  sms: boolean;
  blocks: BlockRow[];
  apps: AppView[];
  grants: Grant[];
  flash?: Flash | undefined;
}

function flash(f: Flash | undefined): Html {
  if (!f) return html``;
  if (f.kind === "error") return html`<p class="error" role="alert">${f.text}</p>`;
  if (f.kind === "notice") return html`<p class="card ok" role="status">${f.text}</p>`;
  return html`<div class="secret" role="status"><h2>${f.title}</h2>
${f.items.map((i) => html`<p>${i.label}<code id="${i.label.toLowerCase().replace(/[^a-z]+/g, "-")}">${i.value}</code></p>`)}
<p class="muted">Copy it now: it is stored only as a hash and is not shown again.</p></div>`;
}

/** A small form posting `fields` to `action` with one button. */
function button(csrf: string, action: string, fields: Record<string, string>, label: string, cls = ""): Html {
  return html`<form method="post" action="${action}" class="inline">${csrfInput(csrf)}${Object.entries(fields).map(
    ([k, v]) => html`<input type="hidden" name="${k}" value="${v}">`,
  )}<button type="submit" class="${cls}">${label}</button></form>`;
}

function tokenSection(m: SettingsModel, title: string, action: string, row: TokenRow | null, about: string): Html {
  const status = row ? html`<p><span class="ok">Enabled</span> <span class="muted">since ${when(row.created)}</span></p>` : html`<p class="muted">Not enabled.</p>`;
  const buttons = row
    ? html`${button(m.csrf, action, { action: "enable" }, "Replace", "secondary")} ${button(m.csrf, action, { action: "revoke" }, "Revoke", "danger")}`
    : button(m.csrf, action, { action: "enable" }, "Enable");
  return html`<section><h2>${title}</h2><p class="muted">${about}</p>${status}<div class="actions">${buttons}</div></section>`;
}

function services(m: SettingsModel): Html {
  const item = (name: string, device: string, added: boolean, about: string) =>
    html`<li class="row"><span><strong>${name}</strong><br><span class="muted">${about}</span></span>${
      added ? html`<span class="ok">Added</span>` : button(m.csrf, "/settings/services", { device }, `Add ${name}`, "secondary")
    }</li>`;
  return html`<section><h2>Services</h2><ul class="list">
${item("Webhooks", "webhook", m.webhook, "webhook sub-devices: actuators that call a URL, sensors tickled by one")}
${item("SMS", "sms", m.sms, "SMS sub-devices: text messages sent through the SMS gateway")}
</ul></section>`;
}

function blocks(m: SettingsModel): Html {
  const list = m.blocks.length
    ? html`<ul class="list">${m.blocks.map(
        (b) => html`<li class="row"><span><strong>${b.short_name}</strong><code class="id">${b.node_id}</code></span><span class="muted">last active ${when(b.last_active)}</span></li>`,
      )}</ul>`
    : html`<p class="muted">No block claimed yet.</p>`;
  return html`<section><h2>Blocks</h2>${list}</section>`;
}

function apps(m: SettingsModel): Html {
  const list = m.apps.length
    ? html`<ul class="list">${m.apps.map(
        (a) => html`<li><div class="row"><strong>${a.name}</strong><span class="muted">${a.tokens} active token${a.tokens === 1 ? "" : "s"}</span></div>
<p class="muted">Client id <code class="id">${a.client_id}</code>Redirect URI <code class="id">${a.redirect_uri}</code></p>
<div class="actions">${button(m.csrf, "/settings/apps/revoke", { client_id: a.client_id }, "Revoke its tokens", "secondary")} ${button(m.csrf, "/settings/apps/delete", { client_id: a.client_id }, "Delete", "danger")}</div></li>`,
      )}</ul>`
    : html`<p class="muted">No application registered.</p>`;
  return html`<section><h2>OAuth applications</h2>
<p class="muted">Register a third-party application to let it ask users for access through OAuth 2.</p>
${list}
<form method="post" action="/settings/apps" class="register">${csrfInput(m.csrf)}
<h3>Register an application</h3>
<label for="app-name">Application name</label><input type="text" id="app-name" name="name" required maxlength="80">
<label for="app-redirect">Redirect URI</label><input type="url" id="app-redirect" name="redirect_uri" required placeholder="https://app.example/callback">
<div class="actions"><button type="submit">Register application</button></div>
</form></section>`;
}

function grants(m: SettingsModel): Html {
  if (m.grants.length === 0) return html``;
  return html`<section><h2>Applications with access to your account</h2><ul class="list">${m.grants.map(
    (g) => html`<li class="row"><span><strong>${g.name}</strong> <span class="muted">${g.tokens} token${g.tokens === 1 ? "" : "s"}</span></span>${button(m.csrf, "/settings/grants/revoke", { client_id: g.client_id }, "Revoke access", "danger")}</li>`,
  )}</ul></section>`;
}

export function settingsPage(m: SettingsModel): Html {
  return frame({
    title: "Settings",
    user: { name: m.userName, csrf: m.csrf },
    body: html`${flash(m.flash)}
${tokenSection(m, "User access token", "/settings/token", m.personal, "Full API access to your account: pass it as user_access_token in the query.")}
${tokenSection(m, "Virtual block token", "/settings/virtual-block-token", m.vblock, "Used like a block token (header X-Service-Token) to create devices under your account without a hardware block.")}
${services(m)}
${blocks(m)}
${apps(m)}
${grants(m)}`,
  });
}
