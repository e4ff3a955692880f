// /dashboard: the user's devices grouped by block, live from the stream.
import { act, api, debounce, follow, h, keepAges, show, shownValue, timeEl } from "./common.js";

let devices = {};
let blocks = {};

function pluggedText(d) {
  return d.meta && d.meta.plugged === false ? "unplugged" : "plugged in";
}

function renameForm(guid, d) {
  const id = `name-${guid}`;
  const input = h("input", { type: "text", id, name: "shortName", value: d.shortName, maxlength: 256, required: true });
  return h(
    "form",
    {
      class: "rename",
      onsubmit: (e) => {
        e.preventDefault();
        void act(`Rename ${d.shortName}`, () => api("PUT", `/device/${encodeURIComponent(guid)}`, { shortName: input.value }));
      },
    },
    h("label", { for: id, class: "sr-only" }, `Name of ${d.default_name} ${guid}`),
    input,
    h("button", { type: "submit", class: "secondary" }, "Save"),
  );
}

function deviceItem(guid, d) {
  const subs = Object.entries(d.subDevices || {});
  return h(
    "li",
    { class: "device", "data-guid": guid },
    renameForm(guid, d),
    h(
      "p",
      { class: "facts" },
      h("span", { class: "type" }, d.device_type),
      " · ",
      h("strong", { class: "value" }, shownValue(d.last_data.DA)),
      " ",
      h("span", { class: "when" }, timeEl(d.last_data.timestamp)),
      " · ",
      h("span", { class: `plugged ${pluggedText(d) === "unplugged" ? "off" : "on"}` }, pluggedText(d)),
    ),
    subs.length ? h("p", { class: "muted subs" }, `Sub-devices: ${subs.map(([, s]) => `${s.shortName} (${s.category} ${s.type})`).join(", ")}`) : null,
    h("a", { href: `/dashboard/device/${encodeURIComponent(guid)}` }, "History and controls", h("span", { class: "sr-only" }, ` of ${d.shortName}`)),
  );
}

function render() {
  const groups = new Map();
  for (const [guid, d] of Object.entries(devices)) {
    if (!groups.has(d.node)) groups.set(d.node, []);
    groups.get(d.node).push([guid, d]);
  }
  if (groups.size === 0) {
    show(h("section", {}, h("p", {}, "No devices yet. They appear here when a block reports them."), h("a", { href: "/dashboard/blocks" }, "Claim a block")));
    return;
  }
  const sections = [...groups.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([node, list]) => {
      const b = blocks[node];
      const title = b ? b.short_name || node : node;
      return h(
        "section",
        { "aria-labelledby": `block-${node}`, "data-node": node },
        h("h2", { id: `block-${node}` }, title, " ", h("code", { class: "node" }, node)),
        b ? h("p", { class: "muted" }, "Last active ", timeEl(b.last_active)) : null,
        h("ul", { class: "list devices" }, list.sort(([a], [b2]) => a.localeCompare(b2)).map(([g, d]) => deviceItem(g, d))),
      );
    });
  show(h("div", {}, sections));
}

async function load() {
  [devices, blocks] = await Promise.all([api("GET", "/devices"), api("GET", "/block")]);
  render();
}

const reload = debounce(() => void load());

function onFrame(f) {
  if (f.type === "data") {
    const d = devices[f.guid];
    if (!d) return reload();
    d.last_data = { DA: f.DA, timestamp: f.timestamp };
    const row = document.querySelector(`li[data-guid="${CSS.escape(f.guid)}"]`);
    if (!row) return reload();
    row.querySelector(".value").textContent = shownValue(f.DA);
    row.querySelector(".when").replaceChildren(timeEl(f.timestamp));
    row.classList.remove("flash");
    void row.offsetWidth;
    row.classList.add("flash");
  } else if (f.type === "config" && (f.config.type === "PLUGIN" || f.config.type === "UNPLUG")) {
    const d = devices[f.guid];
    if (!d) return reload();
    d.meta = { ...d.meta, plugged: f.config.type === "PLUGIN" };
    const el = document.querySelector(`li[data-guid="${CSS.escape(f.guid)}"] .plugged`);
    if (el) {
      el.textContent = pluggedText(d);
      el.className = `plugged ${d.meta.plugged ? "on" : "off"}`;
    }
  } else if (f.type === "device" || f.type === "block") {
    reload();
  }
}

keepAges();
follow(onFrame, { onReconnect: reload });
void load();
