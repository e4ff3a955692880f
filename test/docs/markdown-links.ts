/**
 * The relative links of a set of Markdown pages, checked against the files and headings they point
 * at. Pure (pages in, problems out) so that the test can feed it broken pages as well as the real ones.
 *
 * Anchors follow GitHub's rules (github-slugger): the heading's text as rendered (code spans, links
 * and tags reduced to their text), lower case, every character that is not a letter, a digit, '-',
 * '_' or a space dropped, each space made '-', and a repeated slug suffixed -1, -2, ….
 */
import { posix } from "node:path";

/** One page: its path from the repository root ("docs/api.md") and its text. */
export interface Page {
  path: string;
  text: string;
}

/** A link that leads nowhere: the page it is on, the link as written, and why. */
export interface BrokenLink {
  page: string;
  link: string;
  reason: string;
}

const FENCE = /^ {0,3}(`{3,}|~{3,})/;
const ATX_HEADING = /^ {0,3}#{1,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$/;

/** The page's lines outside fenced code blocks; a fenced line becomes empty, keeping paragraphs apart. */
function proseLines(text: string): string[] {
  const out: string[] = [];
  let fence: string | null = null;
  for (const line of text.split("\n")) {
    const open = FENCE.exec(line)?.[1];
    if (fence === null && open !== undefined) {
      fence = open;
      out.push("");
    } else if (fence !== null) {
      // A fence closes with a run of the same character at least as long as the one that opened it.
      if (open !== undefined && open[0] === fence[0] && open.length >= fence.length) fence = null;
      out.push("");
    } else {
      out.push(line);
    }
  }
  return out;
}

/** Code spans blanked: a link written inside backticks is an example, not a link. */
function withoutCodeSpans(paragraph: string): string {
  return paragraph.replace(/(`+)(?!`)[\s\S]*?[^`]\1(?!`)/g, " ");
}

/** The text GitHub renders for a heading's source. */
function headingText(source: string): string {
  return source
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1")
    .replace(/<[^>]+>/g, "")
    .replace(/`/g, "");
}

/** GitHub's slug of one heading's text, before duplicates are numbered. */
export function slug(text: string): string {
  return headingText(text)
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\-_ ]/gu, "")
    .replace(/ /g, "-");
}

/** Every anchor a page offers: its headings' slugs, numbered as GitHub numbers repeats. */
export function anchorsOf(text: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const line of proseLines(text)) {
    const heading = ATX_HEADING.exec(line)?.[1];
    if (heading === undefined) continue;
    const base = slug(heading);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  return anchors;
}

/** The link targets written on a page: inline links and images, reference definitions, HTML href/src. */
export function linksOf(text: string): string[] {
  const targets: string[] = [];
  const paragraphs = proseLines(text).join("\n").split(/\n[ \t]*\n/);
  for (const paragraph of paragraphs.map(withoutCodeSpans)) {
    for (const m of paragraph.matchAll(/\]\(\s*<([^>]*)>|\]\(\s*([^)\s]+)(?:\s+"[^"]*")?\s*\)/g)) {
      targets.push((m[1] ?? m[2]) as string);
    }
    for (const m of paragraph.matchAll(/^ {0,3}\[[^\]]+\]:\s*(?:<([^>]*)>|(\S+))/gm)) targets.push((m[1] ?? m[2]) as string);
    for (const m of paragraph.matchAll(/<(?:a|img)\b[^>]*?\s(?:href|src)="([^"]+)"/g)) targets.push(m[1] as string);
  }
  return targets;
}

/** A target that leaves the repository (a scheme such as http: or mailto:) or is a bare host. */
function isExternal(target: string): boolean {
  return /^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith("//");
}

/**
 * Every relative link of `pages` to a missing file or a missing anchor. `exists` answers for a
 * repository path (a file or a folder); the pages themselves answer for their own anchors, and a
 * Markdown target that is not among them is read with `read`.
 */
export function brokenLinks(
  pages: Page[],
  exists: (path: string) => boolean,
  read: (path: string) => string,
): BrokenLink[] {
  const texts = new Map(pages.map((p) => [p.path, p.text]));
  const anchorCache = new Map<string, Set<string>>();
  const anchors = (path: string): Set<string> => {
    let set = anchorCache.get(path);
    if (set === undefined) {
      set = anchorsOf(texts.get(path) ?? read(path));
      anchorCache.set(path, set);
    }
    return set;
  };
  const broken: BrokenLink[] = [];
  for (const page of pages) {
    for (const link of linksOf(page.text)) {
      if (isExternal(link)) continue;
      const hash = link.indexOf("#");
      const filePart = hash === -1 ? link : link.slice(0, hash);
      const anchor = hash === -1 ? null : decodeURIComponent(link.slice(hash + 1));
      const target =
        filePart === "" ? page.path : posix.normalize(posix.join(posix.dirname(page.path), decodeURIComponent(filePart)));
      if (target.startsWith("../") || !(texts.has(target) || exists(target))) {
        broken.push({ page: page.path, link, reason: `no file ${target}` });
      } else if (anchor !== null && anchor !== "" && target.endsWith(".md") && !anchors(target).has(anchor)) {
        broken.push({ page: page.path, link, reason: `no heading with the anchor #${anchor} in ${target}` });
      }
    }
  }
  return broken;
}
