/**
 * A tiny browser over fastify.inject() for the page tests: keeps cookies, and reads forms the way a
 * browser would (action, hidden inputs, buttons) so that tests post a form's own hidden fields back.
 */
import type { FastifyInstance, LightMyRequestResponse } from "fastify";

export interface Form {
  action: string;
  fields: Record<string, string>;
  buttons: { name: string; value: string }[];
  inputs: string[];
}

const ENTITIES: Record<string, string> = { "&amp;": "&", "&lt;": "<", "&gt;": ">", "&quot;": '"', "&#39;": "'" };
const unescape = (s: string): string => s.replace(/&(amp|lt|gt|quot|#39);/g, (e) => ENTITIES[e] ?? e);

function attrs(tag: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of tag.matchAll(/([a-zA-Z_-]+)="([^"]*)"/g)) out[m[1] as string] = unescape(m[2] as string);
  return out;
}

export function forms(html: string): Form[] {
  const out: Form[] = [];
  for (const m of html.matchAll(/<form([^>]*)>([\s\S]*?)<\/form>/g)) {
    const form: Form = { action: attrs(m[1] as string).action ?? "", fields: {}, buttons: [], inputs: [] };
    const inner = m[2] as string;
    for (const i of inner.matchAll(/<input([^>]*)>/g)) {
      const a = attrs(i[1] as string);
      if (!a.name) continue;
      form.inputs.push(a.name);
      if (a.type === "hidden") form.fields[a.name] = a.value ?? "";
    }
    for (const b of inner.matchAll(/<button([^>]*)>/g)) {
      const a = attrs(b[1] as string);
      if (a.name) form.buttons.push({ name: a.name, value: a.value ?? "" });
    }
    out.push(form);
  }
  return out;
}

/** The first form posting to `action` whose hidden fields include `match`. */
export function findForm(html: string, action: string, match: Record<string, string> = {}): Form {
  const f = forms(html).find((x) => x.action === action && Object.entries(match).every(([k, v]) => x.fields[k] === v));
  if (!f) throw new Error(`no form posting to ${action} ${JSON.stringify(match)} in the page`);
  return f;
}

export class PageClient {
  readonly cookies = new Map<string, string>();

  /** `remoteAddress`: the client's address, so that tests sharing a server have separate login limits. */
  constructor(
    private readonly app: FastifyInstance,
    private readonly remoteAddress = "127.0.0.1",
  ) {}

  private remember(res: LightMyRequestResponse): LightMyRequestResponse {
    const set = res.headers["set-cookie"];
    for (const c of Array.isArray(set) ? set : set ? [set] : []) {
      const [pair, ...rest] = c.split(";");
      const eq = (pair ?? "").indexOf("=");
      const name = (pair ?? "").slice(0, eq).trim();
      const value = (pair ?? "").slice(eq + 1).trim();
      if (rest.some((r) => /max-age=0/i.test(r.trim())) || value === "") this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    return res;
  }

  private cookieHeader(): Record<string, string> {
    if (this.cookies.size === 0) return {};
    return { cookie: [...this.cookies].map(([k, v]) => `${k}=${v}`).join("; ") };
  }

  async get(url: string): Promise<LightMyRequestResponse> {
    return this.remember(await this.app.inject({ method: "GET", url, headers: this.cookieHeader(), remoteAddress: this.remoteAddress }));
  }

  async post(url: string, fields: Record<string, string>): Promise<LightMyRequestResponse> {
    return this.remember(
      await this.app.inject({
        method: "POST",
        url,
        remoteAddress: this.remoteAddress,
        headers: { ...this.cookieHeader(), "content-type": "application/x-www-form-urlencoded" },
        payload: new URLSearchParams(fields).toString(),
      }),
    );
  }

  /** Posts the form found on `page` with its hidden fields, plus `extra` (typed inputs, a button). */
  submit(page: LightMyRequestResponse | string, action: string, extra: Record<string, string> = {}, match: Record<string, string> = {}) {
    const f = findForm(typeof page === "string" ? page : page.body, action, match);
    return this.post(action, { ...f.fields, ...extra });
  }

  /** Signs in through the login form; returns the response of the post (303 on success). */
  async login(username: string, password: string, next?: string): Promise<LightMyRequestResponse> {
    const page = await this.get(next ? `/auth/login?next=${encodeURIComponent(next)}` : "/auth/login");
    return this.submit(page, "/auth/login", { username, password });
  }
}
