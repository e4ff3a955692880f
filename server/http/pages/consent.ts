/** The OAuth consent page: allow or deny an application access to the account. */
import type { AuthorizeRequest } from "../../services/accounts/oauth.js";
import { type Html, csrfInput, frame, html } from "./layout.js";

export interface ConsentModel {
  userName: string;
  csrf: string;
  req: AuthorizeRequest;
  /** Name of the user who registered the application. */
  ownerName: string;
}

export function consentPage(m: ConsentModel): Html {
  const { req } = m;
  const hidden = {
    client_id: req.app.client_id,
    redirect_uri: req.redirectUri,
    scope: req.scope,
    response_type: "code",
    ...(req.state !== undefined ? { state: req.state } : {}),
  };
  return frame({
    title: "Allow access?",
    user: { name: m.userName, csrf: m.csrf },
    body: html`<section class="consent">
<h2>${req.app.name}</h2>
<p>This application, registered by <strong>${m.ownerName}</strong>, asks for <strong>full access</strong> to your account
(scope <code>all</code>): your devices, their data and history, your blocks and your rules.</p>
<p class="muted">If you allow it, you are sent back to <code class="id">${new URL(req.redirectUri).origin}</code>
You can withdraw its access at any time in your settings.</p>
<form method="post" action="/oauth/authorize">
${csrfInput(m.csrf)}
${Object.entries(hidden).map(([k, v]) => html`<input type="hidden" name="${k}" value="${v}">`)}
<div class="actions"><button type="submit" name="decision" value="allow">Allow</button>
<button type="submit" name="decision" value="deny" class="secondary">Deny</button></div>
</form>
</section>`,
  });
}
