// /dashboard/blocks: the user's blocks with their last activity, blocks awaiting activation, claim
// by node id, unpair; live from the stream's block frames.
import { act, api, debounce, follow, h, keepAges, show, timeEl } from "./common.js";

const claim = (nodeid) => act(`Claim ${nodeid}`, () => api("POST", "/block", { nodeid }));

async function render() {
  const [blocks, awaiting] = await Promise.all([api("GET", "/block"), api("GET", "/block/awaiting")]);
  const mine = Object.entries(blocks);
  const input = h("input", { type: "text", id: "nodeid", name: "nodeid", required: true, pattern: "[A-Za-z0-9]{12,64}", autocomplete: "off", "aria-describedby": "nodeid-help" });
  show(h("div", {},
    h("section", { "aria-labelledby": "awaiting" },
      h("h2", { id: "awaiting" }, "Awaiting activation"),
      awaiting.length
        ? h("ul", { class: "list", id: "awaiting-list" }, awaiting.map((a) => h("li", { class: "row", "data-node": a.nodeid },
            h("span", {}, h("code", { class: "id" }, a.nodeid), h("span", { class: "muted" }, "asking since ", timeEl(a.since))),
            h("button", { type: "button", onclick: () => void claim(a.nodeid).then(() => reload()) }, "Claim", h("span", { class: "sr-only" }, ` ${a.nodeid}`)))))
        : h("p", { class: "muted" }, "No block on your network is asking for activation right now."),
      h("form", { class: "register", onsubmit: (e) => { e.preventDefault(); void claim(input.value).then(() => reload()); } },
        h("label", { for: "nodeid" }, "Claim a block by its node id"),
        input,
        h("p", { id: "nodeid-help", class: "muted" }, "12 or more letters and digits, printed on the block. Start the block first: it must be asking for activation."),
        h("div", { class: "actions" }, h("button", { type: "submit" }, "Claim block"))),
    ),
    h("section", { "aria-labelledby": "yours" },
      h("h2", { id: "yours" }, "Your blocks"),
      mine.length
        ? h("ul", { class: "list", id: "block-list" }, mine.map(([node, b]) => h("li", { class: "row", "data-node": node },
            h("span", {}, h("strong", {}, b.short_name || node), h("code", { class: "id" }, node), h("span", { class: "muted" }, "last active ", timeEl(b.last_active))),
            h("button", { type: "button", class: "danger", onclick: () => {
              if (!confirm(`Unpair ${node}? Its devices and their history are deleted.`)) return;
              void act(`Unpair ${node}`, () => api("DELETE", `/block/${node}`)).then(() => reload());
            } }, "Unpair", h("span", { class: "sr-only" }, ` ${node}`)))))
        : h("p", { class: "muted" }, "No block claimed yet."),
    ),
  ));
}

const reload = debounce(() => void render());
keepAges();
follow((f) => f.type === "block" && reload(), { onReconnect: reload });
void render();
