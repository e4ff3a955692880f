// Shared helpers of the dashboard pages: the REST API signed by the session cookie and the page's
// CSRF token, a small DOM builder (text only, never HTML strings), relative ages, the live stream.

const meta = document.querySelector('meta[name="csrf-token"]');
export const csrf = meta ? meta.getAttribute("content") : "";

export class ApiError extends Error {
  constructor(message, status) {
    super(message);
    this.status = status;
  }
}

/** Calls `/rest/v0<path>`; resolves with the envelope's data, rejects with the server's message. */
export async function api(method, path, body) {
  const headers = { "x-csrf-token": csrf };
  if (body !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(`/rest/v0${path}`, {
    method,
    headers,
    credentials: "same-origin",
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  let env = null;
  try {
    env = await res.json();
  } catch {
    env = null;
  }
  if (!res.ok || !env || env.result !== 1) throw new ApiError(env && env.error ? String(env.error) : `HTTP ${res.status}`, res.status);
  return env.data;
}

/** `h("li", {class: "row", onclick: f}, "text", child)`: attributes, listeners (on*) and children. */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
    else if (k === "value") el.value = v;
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

/** "just now", "42 s ago", "5 min ago", "3 h ago", "2 d ago". */
export function age(ts, now = Date.now()) {
  if (ts === null || ts === undefined) return "never";
  const s = Math.max(0, Math.round((now - ts) / 1000));
  if (s < 5) return "just now";
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  return `${Math.floor(s / 86400)} d ago`;
}

/** Keeps every `time[data-ts]` element's text a relative age, refreshed every 5 s. */
export function keepAges(root = document) {
  const tick = () => {
    for (const el of root.querySelectorAll("time[data-ts]")) el.textContent = age(Number(el.dataset.ts));
  };
  tick();
  setInterval(tick, 5000);
}

export function timeEl(ts) {
  return h("time", ts ? { "data-ts": ts, datetime: new Date(ts).toISOString(), title: new Date(ts).toLocaleString() } : {}, age(ts));
}

/** Shows a message in the page's status line (read by screen readers). */
export function say(text, isError = false) {
  let el = document.getElementById("flash");
  if (!el) {
    el = h("p", { id: "flash", role: "status" });
    document.getElementById("app").before(el);
  }
  el.textContent = text;
  el.className = isError ? "error" : "ok";
}

/** Runs an action from a button, saying what happened. */
export async function act(what, f) {
  try {
    await f();
    say(`${what}: done`);
    return true;
  } catch (err) {
    say(`${what}: ${err.message}`, true);
    return false;
  }
}

/**
 * Follows the live stream (docs/dashboard.md): calls onFrame for each frame, and onReconnect after
 * a reconnection (frames may have been missed: re-read). Retries with a growing pause.
 */
export function follow(onFrame, { guids, onReconnect } = {}) {
  const live = document.getElementById("live");
  let pause = 1000;
  let opened = false;
  const connect = () => {
    const url = new URL("/rest/v0/stream", location.href);
    url.protocol = location.protocol === "https:" ? "wss:" : "ws:";
    if (guids && guids.length) url.searchParams.set("guid", guids.join(","));
    const ws = new WebSocket(url);
    ws.onopen = () => {
      pause = 1000;
      live.textContent = "Live: updates appear as they happen.";
      live.dataset.state = "live";
      if (opened && onReconnect) onReconnect();
      opened = true;
    };
    ws.onmessage = (m) => {
      try {
        onFrame(JSON.parse(m.data));
      } catch (err) {
        console.warn("stream frame not handled", err);
      }
    };
    ws.onclose = () => {
      live.textContent = "Not live: reconnecting…";
      live.dataset.state = "down";
      setTimeout(connect, pause);
      pause = Math.min(pause * 2, 30000);
    };
  };
  connect();
}

/** Re-runs `f` once after a burst of calls (many frames, one reload). */
export function debounce(f, ms = 200) {
  let timer = null;
  return () => {
    clearTimeout(timer);
    timer = setTimeout(f, ms);
  };
}

/** Renders `node` as the page's content. */
export function show(node) {
  document.getElementById("app").replaceChildren(node);
}

/** Numeric or text DA as shown. */
export function shownValue(da) {
  if (da === null || da === undefined) return "—";
  return typeof da === "number" ? String(Math.round(da * 1000) / 1000) : da;
}
