/** E-mail of the sendEmail action: nodemailer over the SMTP server of `--smtp-url`. */
import nodemailer, { type Transporter } from "nodemailer";
import { unavailable } from "../../errors.js";
import type { Snapshot } from "./camera.js";

export interface MailerOptions {
  /** `smtp://user:pass@host:port` or `smtps://…`; unset: sendEmail fails with a clear error. */
  smtpUrl?: string | undefined;
  /** Sender address. Default `blockkit <blockkit@localhost>`. */
  from?: string | undefined;
  /** Limit of connecting, greeting and each socket wait, ms. Default 10 000. */
  timeoutMs?: number | undefined;
}

export class Mailer {
  private transport: Transporter | null = null;

  constructor(private readonly options: MailerOptions = {}) {}

  /** Sends one message; resolves with its Message-ID. */
  async send(mail: { to: string; subject: string; text: string; attachment?: Snapshot }): Promise<string> {
    const url = this.options.smtpUrl;
    if (!url) throw unavailable("no SMTP server is configured: start the server with --smtp-url");
    const t = this.options.timeoutMs ?? 10_000;
    this.transport ??= nodemailer.createTransport({ url, connectionTimeout: t, greetingTimeout: t, socketTimeout: t });
    try {
      const info = (await this.transport.sendMail({
        from: this.options.from ?? "blockkit <blockkit@localhost>",
        to: mail.to,
        subject: mail.subject,
        text: mail.text,
        attachments: mail.attachment
          ? [{ filename: "snapshot.jpg", content: mail.attachment.body, contentType: mail.attachment.contentType }]
          : [],
      })) as { messageId: string };
      return info.messageId;
    } catch (err) {
      throw unavailable(`the SMTP server refused the message: ${(err as Error).message}`, err);
    }
  }

  close(): void {
    this.transport?.close();
    this.transport = null;
  }
}
