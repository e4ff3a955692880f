// /dashboard/device/<GUID>: history chart with interval and fn pickers, actuation controls by
// type, callback and sub-devices management; live from the stream (narrowed to this device).
import { drawChart, columns } from "./chart.js";
import { act, api, follow, h, keepAges, show, shownValue, timeEl } from "./common.js";

const guid = document.getElementById("app").dataset.guid;
const path = `/device/${encodeURIComponent(guid)}`;
let device = null;
let chart = null;
let raw = [];

const RANGES = { "1 hour": 3600e3, "24 hours": 86400e3, "7 days": 7 * 86400e3, "30 days": 30 * 86400e3 };
const INTERVALS = ["raw", "1min", "10min", "1hour", "1day"];
const FNS = ["mean", "min", "max", "sum", "count", "stddev", "ss"];

function select(id, label, options, value) {
  return [h("label", { for: id }, label), h("select", { id, name: id }, options.map((o) => h("option", { value: o, selected: o === value }, o)))];
}

function field(id, label, attrs) {
  return [h("label", { for: id }, label), h("input", { id, name: id, type: "text", ...attrs })];
}

function controls(d) {
  if (!d.is_actuator) return h("p", { class: "muted" }, "This device is a sensor: it takes no commands.");
  const send = (da) => act(`Send ${da}`, () => api("PUT", path, { DA: da }));
  if (/relay|switch|socket/.test(d.device_type)) {
    const on = String(d.last_data.DA) === "1";
    return h(
      "div",
      { class: "actions" },
      h("button", { type: "button", id: "toggle", role: "switch", "aria-checked": on ? "true" : "false", onclick: async (e) => {
        const button = e.currentTarget;
        const next = button.getAttribute("aria-checked") === "true" ? "0" : "1";
        if (await send(next)) button.setAttribute("aria-checked", next === "1" ? "true" : "false");
      } }, `${d.shortName}: on/off`),
    );
  }
  if (d.device_type === "rgbled") {
    const current = typeof d.last_data.DA === "string" && /^[0-9A-Fa-f]{6}$/.test(d.last_data.DA) ? `#${d.last_data.DA}` : "#ffffff";
    const input = h("input", { type: "color", id: "colour", name: "colour", value: current });
    return h(
      "form",
      { onsubmit: (e) => { e.preventDefault(); void send(input.value.slice(1).toUpperCase()); } },
      h("label", { for: "colour" }, "Colour"),
      input,
      h("div", { class: "actions" }, h("button", { type: "submit" }, "Set colour")),
    );
  }
  const [label, input] = field("command", "Value to send", { required: true, maxlength: 4096 });
  return h("form", { onsubmit: (e) => { e.preventDefault(); void send(input.value); } }, label, input, h("div", { class: "actions" }, h("button", { type: "submit" }, "Send")));
}

function table(points) {
  const last = points.slice(-50).reverse();
  return h(
    "details",
    {},
    h("summary", {}, `Data as a table (last ${last.length} of ${points.length})`),
    h("table", {}, h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Time"), h("th", { scope: "col" }, "Value"))), h("tbody", {}, last.map((p) => h("tr", {}, h("td", {}, p.t), h("td", {}, String(p.v)))))),
  );
}

async function loadHistory() {
  const range = RANGES[document.getElementById("range").value];
  const interval = document.getElementById("interval").value;
  const fn = document.getElementById("fn").value;
  document.getElementById("fn").disabled = interval === "raw";
  const to = Date.now();
  const q = new URLSearchParams({ from: String(to - range), to: String(to) });
  if (interval !== "raw") {
    q.set("interval", interval);
    q.set("fn", fn);
  }
  raw = await api("GET", `${path}/data?${q}`);
  const host = document.getElementById("chart");
  const data = columns(raw);
  document.getElementById("chart-note").textContent = data[0].length ? `${data[0].length} points` : "No numeric readings in this range.";
  chart = data[0].length ? drawChart(host, data, device.shortName) : (host.replaceChildren(), null);
  document.getElementById("table").replaceChildren(table(raw));
}

function history(d) {
  if (!d.has_time_series) return h("p", { class: "muted" }, "This device keeps no history.");
  const pick = h("form", { class: "pickers", onchange: () => void act("Load history", loadHistory), onsubmit: (e) => e.preventDefault() },
    h("div", {}, select("range", "Range", Object.keys(RANGES), "24 hours")),
    h("div", {}, select("interval", "Interval", INTERVALS, "raw")),
    h("div", {}, select("fn", "Function", FNS, "mean")),
  );
  return h("div", {}, pick, h("div", { id: "chart", class: "chart", role: "img", "aria-label": `History chart of ${d.shortName}` }), h("p", { id: "chart-note", class: "muted" }), h("div", { id: "table" }));
}

async function callbackSection() {
  let url = "";
  try {
    url = (await api("GET", `${path}/callback`)).url;
  } catch (err) {
    if (err.status !== 404) throw err;
  }
  const input = h("input", { type: "url", id: "callback", name: "url", value: url, placeholder: "https://example.org/hook", required: true });
  return h(
    "form",
    { onsubmit: (e) => { e.preventDefault(); void act("Save callback", () => api(url ? "PUT" : "POST", `${path}/callback`, { url: input.value })).then((ok) => ok && render()); } },
    h("label", { for: "callback" }, "Callback URL (the server POSTs each reading to it)"),
    input,
    h("div", { class: "actions" }, h("button", { type: "submit" }, url ? "Change callback" : "Add callback"),
      url ? h("button", { type: "button", class: "danger", onclick: () => void act("Remove callback", () => api("DELETE", `${path}/callback`)).then((ok) => ok && render()) }, "Remove callback") : null),
  );
}

function subDevices(d) {
  const list = Object.entries(d.subDevices || {});
  const add = h("form", { class: "register", onsubmit: (e) => {
    e.preventDefault();
    const f = new FormData(e.currentTarget);
    const body = { category: f.get("category"), type: f.get("type"), shortName: f.get("shortName") };
    if (f.get("data")) body.data = f.get("data");
    if (f.get("url")) body.url = f.get("url");
    void act("Add sub-device", () => api("POST", `${path}/subdevice`, body)).then((ok) => ok && render());
  } },
    h("h3", {}, "Add a sub-device"),
    select("category", "Category", ["rf", "webhook", "sms"], "rf"),
    select("type", "Type", ["actuator", "sensor"], "actuator"),
    field("shortName", "Name", { required: true, maxlength: 256 }),
    field("data", "Data (RF code, phone number…)", {}),
    field("url", "URL (webhook actuator)", { type: "url" }),
    h("div", { class: "actions" }, h("button", { type: "submit", class: "secondary" }, "Add sub-device")),
  );
  return h("div", {},
    list.length ? h("ul", { class: "list" }, list.map(([id, s]) => h("li", { class: "row" },
      h("span", {}, h("strong", {}, s.shortName), ` ${s.category} ${s.type}`, s.data ? ` · ${s.data}` : ""),
      h("button", { type: "button", class: "danger", onclick: () => void act(`Delete ${s.shortName}`, () => api("DELETE", `${path}/subdevice/${id}`)).then((ok) => ok && render()) }, "Delete", h("span", { class: "sr-only" }, ` ${s.shortName}`)),
    ))) : h("p", { class: "muted" }, "No sub-devices."),
    add,
  );
}

async function render() {
  device = await api("GET", path);
  const d = device;
  document.querySelector("h1").textContent = d.shortName;
  document.title = `${d.shortName} · blockkit`;
  show(h("div", {},
    h("section", { "aria-labelledby": "now" }, h("h2", { id: "now" }, "Now"),
      h("p", {}, h("span", { class: "type" }, d.device_type), " · ", h("strong", { id: "value", class: "value" }, shownValue(d.last_data.DA)), " ", h("span", { id: "when" }, timeEl(d.last_data.timestamp)),
        " · ", h("span", { class: "plugged" }, d.meta && d.meta.plugged === false ? "unplugged" : "plugged in")),
      h("p", { class: "muted" }, h("code", { class: "id" }, guid)),
      controls(d)),
    h("section", { "aria-labelledby": "hist" }, h("h2", { id: "hist" }, "History"), history(d)),
    h("section", { "aria-labelledby": "cb" }, h("h2", { id: "cb" }, "Callback"), await callbackSection()),
    h("section", { "aria-labelledby": "subs" }, h("h2", { id: "subs" }, "Sub-devices"), subDevices(d)),
  ));
  if (d.has_time_series) await loadHistory();
}

function onFrame(f) {
  if (f.type === "data" && f.guid === guid) {
    document.getElementById("value").textContent = shownValue(f.DA);
    document.getElementById("when").replaceChildren(timeEl(f.timestamp));
    const interval = document.getElementById("interval");
    if (interval && interval.value === "raw") {
      raw.push({ t: new Date(f.timestamp).toISOString().replace("Z", "+0000"), v: f.DA });
      const data = columns(raw);
      if (chart && data[0].length) chart.setData(data);
      else if (data[0].length) chart = drawChart(document.getElementById("chart"), data, device.shortName);
    }
  } else if (f.type === "device" && f.guid === guid) {
    if (f.change === "deleted") show(h("p", { class: "error", role: "alert" }, "This device was deleted."));
    else void render();
  }
}

keepAges();
follow(onFrame, { guids: [guid], onReconnect: () => void render() });
render().catch((err) => show(h("p", { class: "error", role: "alert" }, err.message)));
