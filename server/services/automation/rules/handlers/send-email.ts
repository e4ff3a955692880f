/** `sendEmail {to, subject, body}`: mails through the SMTP server of --smtp-url (with the run's snapshot, if any). */
import { badRequest } from "../../../../errors.js";
import type { ActionHandler } from "./types.js";

const ADDRESS = /^[^\s@<>(),;:"]+@[^\s@<>(),;:"]+$/;

export const sendEmail: ActionHandler = {
  kind: "action",
  name: "sendEmail",
  aliases: [],
  async validate(params, ctx) {
    const to = ctx.text("to", { max: 320 }) as string;
    if (!ADDRESS.test(to)) throw badRequest(`${ctx.where}: params.to "${to}" is not an e-mail address`);
    const subject = ctx.text("subject", { max: 998 }) as string;
    if (/[\r\n]/.test(subject)) throw badRequest(`${ctx.where}: params.subject must be one line`);
    return { ...params, to, subject, body: ctx.text("body", { max: 65_536 }) };
  },
  async run(params, ctx) {
    const snap = ctx.carry.snapshot;
    const id = await ctx.deps.sendMail({
      to: params.to as string,
      subject: params.subject as string,
      text: params.body as string,
      ...(snap ? { attachment: snap } : {}),
    });
    return `mailed ${params.to as string} (${id})`;
  },
};
