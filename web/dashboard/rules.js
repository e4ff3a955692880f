// /dashboard/rules: list, suspend/resume, run history, create and edit as JSON with the server's
// validation message shown at the field; live from the stream's rule frames.
import { act, api, debounce, follow, h, keepAges, say, show, timeEl } from "./common.js";

const EXAMPLE = {
  shortName: "Lamp on when the button is pressed",
  preconditions: [{ handler: "serviceChange", params: { guid: "<button GUID>", to: "1" } }],
  actions: [{ handler: "serviceSendCommand", params: { guid: "<relay GUID>", da: "1" } }],
  timeout: 0,
};
const open = new Set();

function editor(rule) {
  const body = rule ? { shortName: rule.shortName, preconditions: rule.preconditions, actions: rule.actions, timeout: rule.timeout } : EXAMPLE;
  const area = h("textarea", { id: "rule-json", name: "rule", rows: 14, spellcheck: "false", "aria-describedby": "rule-error rule-help" }, JSON.stringify(body, null, 2));
  const error = h("p", { id: "rule-error", class: "field-error", "aria-live": "assertive" });
  const fail = (msg) => {
    error.textContent = msg;
    area.setAttribute("aria-invalid", "true");
    area.focus();
  };
  return h("form", { class: "editor", id: "rule-editor", onsubmit: async (e) => {
    e.preventDefault();
    error.textContent = "";
    area.removeAttribute("aria-invalid");
    let parsed;
    try {
      parsed = JSON.parse(area.value);
    } catch (err) {
      fail(`Not JSON: ${err.message}`);
      return;
    }
    try {
      await api(rule ? "PUT" : "POST", rule ? `/rule/${rule.rid}` : "/rule", parsed);
    } catch (err) {
      fail(err.message);
      return;
    }
    say(rule ? `Rule ${rule.rid} saved` : "Rule created");
    void render(null);
  } },
    h("h2", {}, rule ? `Edit rule ${rule.rid}` : "New rule"),
    h("label", { for: "rule-json" }, "Rule as JSON"),
    h("p", { id: "rule-help", class: "muted" }, "shortName, preconditions and actions (handler + params), timeout in seconds."),
    area,
    error,
    h("div", { class: "actions" }, h("button", { type: "submit" }, rule ? "Save rule" : "Create rule"),
      rule ? h("button", { type: "button", class: "secondary", onclick: () => void render(null) }, "Cancel") : null),
  );
}

async function historyOf(rid, host) {
  const r = await api("GET", `/rule/${rid}`);
  host.replaceChildren(r.history.length
    ? h("ol", { class: "runs" }, r.history.slice().reverse().map((run) => h("li", {}, timeEl(run.timestamp), " ", h("strong", { class: run.ok ? "ok" : "bad" }, run.ok ? "ok" : "failed"), run.error ? ` · ${run.error}` : "")))
    : h("p", { class: "muted" }, "Not run yet."));
}

function ruleItem(r) {
  const hist = h("div", { class: "history", id: `history-${r.rid}` });
  const details = h("details", { ontoggle: (e) => {
    if (e.currentTarget.open) {
      open.add(r.rid);
      void historyOf(r.rid, hist);
    } else open.delete(r.rid);
  } }, h("summary", {}, "Run history"), hist);
  if (open.has(r.rid)) details.open = true;
  const state = r.suspended ? "suspended" : "active";
  return h("li", { "data-rid": r.rid },
    h("div", { class: "row" }, h("span", {}, h("strong", {}, r.shortName), " ", h("span", { class: `state ${state}` }, state)),
      h("span", { class: "actions" },
        h("button", { type: "button", class: "secondary", onclick: () => void act(`${r.suspended ? "Resume" : "Suspend"} ${r.shortName}`, () => api(r.suspended ? "DELETE" : "POST", `/rule/${r.rid}/suspend`)).then(() => render(null)) },
          r.suspended ? "Resume" : "Suspend", h("span", { class: "sr-only" }, ` ${r.shortName}`)),
        h("button", { type: "button", class: "secondary", onclick: () => void render(r) }, "Edit", h("span", { class: "sr-only" }, ` ${r.shortName}`)),
        h("button", { type: "button", class: "danger", onclick: () => {
          if (confirm(`Delete rule ${r.shortName}?`)) void act(`Delete ${r.shortName}`, () => api("DELETE", `/rule/${r.rid}`)).then(() => render(null));
        } }, "Delete", h("span", { class: "sr-only" }, ` ${r.shortName}`)))),
    details,
  );
}

async function render(editing) {
  const rules = await api("GET", "/rule");
  show(h("div", {},
    h("section", { "aria-labelledby": "rules" }, h("h2", { id: "rules" }, "Your rules"),
      rules.length ? h("ul", { class: "list", id: "rule-list" }, rules.map(ruleItem)) : h("p", { class: "muted" }, "No rules yet.")),
    h("section", {}, editor(editing)),
  ));
  if (editing) document.getElementById("rule-json").focus();
  for (const rid of open) {
    const host = document.getElementById(`history-${rid}`);
    if (host) void historyOf(rid, host);
  }
}

const refreshOpen = debounce(() => {
  for (const rid of open) {
    const host = document.getElementById(`history-${rid}`);
    if (host) void historyOf(rid, host);
  }
});
keepAges();
follow((f) => f.type === "rule" && open.has(f.rid) && refreshOpen(), { onReconnect: refreshOpen });
void render(null);
