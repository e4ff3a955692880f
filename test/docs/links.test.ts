/**
 * Every relative link of the docs a newcomer reads (docs/**.md, README.md, CONTRIBUTING.md) leads to
 * a file that exists and, for a #anchor into a Markdown page, to one of its headings. Pages get
 * split and headings renamed; a link left behind is found here, not by a reader.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { anchorsOf, brokenLinks, linksOf, type Page } from "./markdown-links.js";

const root = fileURLToPath(new URL("../..", import.meta.url));

function markdownUnder(dir: string): string[] {
  return readdirSync(join(root, dir), { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith(".md"))
    .map((e) => relative(root, join(e.parentPath, e.name)).split("\\").join("/"));
}

function repositoryPages(): Page[] {
  const paths = [...markdownUnder("docs"), "README.md", "CONTRIBUTING.md"].sort();
  return paths.map((path) => ({ path, text: readFileSync(join(root, path), "utf8") }));
}

const inRepository = (path: string): boolean => existsSync(join(root, path));
const readRepository = (path: string): string => readFileSync(join(root, path), "utf8");

describe("links in the docs", () => {
  it("lead to files and headings that exist", () => {
    const started = performance.now();
    const pages = repositoryPages();
    const broken = brokenLinks(pages, inRepository, readRepository).map((b) => `${b.page}: ${b.link} (${b.reason})`);
    expect(broken).toEqual([]);
    // A check that stays cheap enough to run with every change.
    expect(performance.now() - started).toBeLessThan(1_000);
    // The walk found the pages and their links, so an empty list means something.
    expect(pages.length).toBeGreaterThan(20);
    expect(pages.reduce((n, p) => n + linksOf(p.text).length, 0)).toBeGreaterThan(100);
  });

  it("include, in the README, a link to every page under docs/", () => {
    const linked = new Set(linksOf(readRepository("README.md")).map((l) => l.split("#")[0]));
    expect(markdownUnder("docs").filter((page) => !linked.has(page))).toEqual([]);
  });

  it("names the page and the link of a missing file and of a missing anchor", () => {
    const pages: Page[] = [
      { path: "docs/a.md", text: "# A\n\nSee [b](b.md#second), [gone](gone.md), [b's lost part](b.md#third) and [self](#a).\n" },
      { path: "docs/b.md", text: "# B\n\n## Second\n" },
    ];
    expect(brokenLinks(pages, () => false, () => "")).toEqual([
      { page: "docs/a.md", link: "gone.md", reason: "no file docs/gone.md" },
      { page: "docs/a.md", link: "b.md#third", reason: "no heading with the anchor #third in docs/b.md" },
    ]);
  });

  it("reads a target that is not among the pages, and resolves paths from the page's folder", () => {
    const pages: Page[] = [{ path: "README.md", text: "[ops](docs/ops.md#limits) [up](./docs/../CONTRIBUTING.md)\n" }];
    const files = new Map([["docs/ops.md", "# Ops\n\n## Limits\n"], ["CONTRIBUTING.md", "# C\n"]]);
    const broken = brokenLinks(pages, (p) => files.has(p), (p) => files.get(p) ?? "");
    expect(broken).toEqual([]);
    expect(brokenLinks(pages, () => false, () => "")).toHaveLength(2);
  });

  it("makes anchors by GitHub's rules: punctuation dropped, spaces to '-', repeats numbered", () => {
    const text = [
      "# Connections, slow clients, activation holds",
      "## Across instances (tested with `test/e2e/scaleout.test.ts`)",
      "## Run on a [Raspberry Pi](https://example.org)",
      "## Limits — a_b",
      "## Tests",
      "## Tests",
      "## Tests ##",
      "```sh",
      "# not a heading",
      "```",
    ].join("\n");
    expect([...anchorsOf(text)]).toEqual([
      "connections-slow-clients-activation-holds",
      "across-instances-tested-with-teste2escaleouttestts",
      "run-on-a-raspberry-pi",
      "limits--a_b",
      "tests",
      "tests-1",
      "tests-2",
    ]);
  });

  it("skips links in code, external links, and links to non-Markdown anchors", () => {
    const text = [
      "`[x](missing.md)` and ``[y](missing.md)`` in code spans, [web](https://example.org/a.md#b),",
      "[mail](mailto:a@b.c), [line](src.ts#L10).",
      "",
      "```md",
      "[z](missing.md)",
      "```",
      "[ref]: <ref target.md>",
      '<img src="img.png"> <a href="page.md#top">top</a>',
    ].join("\n");
    expect(linksOf(text)).toEqual(["https://example.org/a.md#b", "mailto:a@b.c", "src.ts#L10", "ref target.md", "img.png", "page.md#top"]);
    const broken = brokenLinks([{ path: "x.md", text }], (p) => p === "src.ts" || p === "img.png", () => "");
    expect(broken.map((b) => b.link)).toEqual(["ref target.md", "page.md#top"]);
  });
});
