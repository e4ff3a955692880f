/** The pages' one stylesheet and icon: small, no web fonts, readable on a phone. */
import type { FastifyInstance } from "fastify";
import { pageDoc } from "../openapi/route-doc.js";

const CSS = `
*{box-sizing:border-box}
html{-webkit-text-size-adjust:100%}
body{margin:0;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1d232a;background:#f3f5f7}
header{display:flex;flex-wrap:wrap;gap:.5rem;align-items:center;justify-content:space-between;padding:.75rem 1rem;background:#17324d;color:#fff}
header a.brand{color:#fff;font-weight:700;text-decoration:none;letter-spacing:.02em}
nav{display:flex;gap:.75rem;align-items:center;font-size:.9rem}
main{max-width:46rem;margin:0 auto;padding:1rem}
h1{font-size:1.5rem;margin:.5rem 0 1rem}
h2{font-size:1.15rem;margin:0 0 .5rem}
section,.card{background:#fff;border:1px solid #d9dee3;border-radius:.5rem;padding:1rem;margin:0 0 1rem}
p{margin:.25rem 0 .75rem}
.muted{color:#5b6670;font-size:.9rem}
label{display:block;font-weight:600;margin:.5rem 0 .25rem}
input[type=text],input[type=password],input[type=url]{width:100%;padding:.6rem .7rem;font:inherit;border:1px solid #aab4be;border-radius:.375rem;background:#fff}
input:focus,button:focus{outline:2px solid #2f7ad1;outline-offset:1px}
button{font:inherit;padding:.55rem 1rem;border-radius:.375rem;border:1px solid #1f5fa8;background:#2f7ad1;color:#fff;cursor:pointer;min-height:2.5rem}
button.secondary{background:#fff;color:#1f5fa8}
button.danger{background:#fff;color:#b42318;border-color:#b42318}
button.link{background:none;border:none;color:#fff;text-decoration:underline;padding:0;min-height:0}
form{margin:0}
form.inline{display:inline}
form.register{border-top:1px solid #e6e9ec;margin-top:.75rem;padding-top:.75rem}
h3{font-size:1rem;margin:0}
.actions{display:flex;flex-wrap:wrap;gap:.5rem;margin-top:.75rem}
.secret{background:#fff8e1;border:1px solid #e0b100;border-radius:.5rem;padding:.75rem 1rem;margin:0 0 1rem}
.secret code,code.id{display:block;word-break:break-all;font:14px/1.4 ui-monospace,SFMono-Regular,Menlo,monospace;background:#f6f8fa;padding:.4rem .5rem;border-radius:.25rem;margin:.25rem 0}
.error{background:#fdecea;border:1px solid #b42318;color:#7a1a12;border-radius:.5rem;padding:.75rem 1rem;margin:0 0 1rem}
.ok{color:#1a7f37;font-weight:600}
ul.list{list-style:none;padding:0;margin:0}
ul.list>li{border-top:1px solid #e6e9ec;padding:.6rem 0}
ul.list>li:first-child{border-top:none}
.row{display:flex;flex-wrap:wrap;gap:.5rem 1rem;justify-content:space-between;align-items:center}
.row>span:first-child{flex:1 1 16rem;min-width:0}
.consent{text-align:left}
@media (max-width:30rem){main{padding:.75rem}.actions button{flex:1 1 auto}}
`;

export const ICON = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><rect width="16" height="16" rx="3" fill="#17324d"/><rect x="4" y="4" width="8" height="8" rx="1" fill="#2f7ad1"/></svg>`;

export function assetRoutes(app: FastifyInstance): void {
  app.get("/assets/style.css", { schema: pageDoc({ summary: "The pages' stylesheet", description: "Cached for an hour.", ok: { 200: { description: "CSS.", type: "text/css" } } }) }, async (_request, reply) => {
    return reply.type("text/css; charset=utf-8").header("cache-control", "public, max-age=3600").send(CSS);
  });
  app.get("/assets/icon.svg", { schema: pageDoc({ summary: "The pages' icon", description: "Cached for a day.", ok: { 200: { description: "SVG.", type: "image/svg+xml" } } }) }, async (_request, reply) => {
    return reply.type("image/svg+xml").header("cache-control", "public, max-age=86400").send(ICON);
  });
}
