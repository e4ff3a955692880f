/**
 * `blockkit completion bash|zsh|fish`: a completion script generated from commander's command tree
 * (commander has none of its own). The tree becomes a few data functions (sub-commands, options,
 * options that take a value, and the kinds of the positional arguments of each command path); a small
 * fixed function per shell walks the words typed so far with them. Values come from what is on disk:
 * the last `devices`, `blocks` and `rules` listings and the profile names, cached in
 * `$XDG_CACHE_HOME/blockkit/` (cli/config.ts) — completing never starts node or calls the server.
 */
import { type Command, InvalidArgumentError, type Option } from "commander";
import { FOLD_FNS } from "../protocol/history.js";
import { type CliIO, OUTPUTS } from "./api/context.js";
import { allCommands, subPath } from "./help.js";
import { takesAncestorOption } from "./sim-sub.js";

export const SHELLS = ["bash", "zsh", "fish"] as const;
export type Shell = (typeof SHELLS)[number];

/** What a value is completed from: a cache file, fixed words, or the file system. */
type Kind = "guid" | "nodeid" | "rid" | "profile" | "output" | "fn" | "shell" | "file" | "none";

const OPTION_KINDS: Record<string, Kind> = {
  "--profile": "profile",
  "--output": "output",
  "--fn": "fn",
  "--out": "file",
  "--scenario": "file",
  "--report": "file",
  "--config": "file",
  "--data": "file",
  "--serial": "file",
  "--state-dir": "file",
};

const ARG_KINDS: Record<string, Kind> = { guid: "guid", guids: "guid", nodeid: "nodeid", rid: "rid", file: "file", shell: "shell", name: "none" };

interface Entry {
  path: string;
  subs: string[];
  options: string[];
  valueOptions: string[];
  /** Positional kinds in order; the last one ends in `...` when it repeats. */
  args: string[];
}

function flagsOf(o: Option): string[] {
  return [o.short, o.long].filter((f): f is string => typeof f === "string");
}

function entries(program: Command): Entry[] {
  return allCommands(program).map((cmd) => {
    const chain: Command[] = [];
    for (let c: Command | null = cmd; c && c.parent; c = c.parent) chain.push(c);
    // A sim sub-command is offered only the run options it takes (cli/sim-sub.ts).
    // Hidden options (--worker-part: the pool's own) are not offered, as --help does not list them.
    const options = chain.flatMap((c) => (c === cmd ? c.options : c.options.filter((o) => takesAncestorOption(cmd, o)))).filter((o) => !o.hidden);
    const path = subPath(cmd);
    const argKind = (name: string): Kind => (path === "profiles use" ? "profile" : (ARG_KINDS[name] ?? "none"));
    return {
      path,
      subs: cmd.commands.map((c) => c.name()),
      options: [...new Set([...options.flatMap(flagsOf), "--help"])],
      valueOptions: options.filter((o) => o.required || o.optional).flatMap(flagsOf),
      args: cmd.registeredArguments.map((a) => `${argKind(a.name())}${a.variadic ? "..." : ""}`),
    };
  });
}

/** The kind of each value-taking option, keyed by every flag spelling. */
function optionKinds(list: Entry[]): Map<string, Kind> {
  const kinds = new Map<string, Kind>();
  for (const e of list) for (const f of e.valueOptions) kinds.set(f, OPTION_KINDS[f] ?? (f === "-o" ? "output" : "none"));
  return kinds;
}

const words = (list: string[]): string => list.join(" ");
const WORDS: Partial<Record<Kind, string>> = { output: words([...OUTPUTS]), fn: words([...FOLD_FNS]), shell: words([...SHELLS]) };
const CACHE: Partial<Record<Kind, string>> = { guid: "guids", nodeid: "nodeids", rid: "rids", profile: "profiles" };

/** The data functions in POSIX `case` form, shared by bash and zsh. */
function shData(list: Entry[]): string {
  const fn = (name: string, pick: (e: Entry) => string[]): string =>
    [`__blockkit_${name}() {`, '  case "$1" in', ...list.map((e) => `    "${e.path}") echo "${words(pick(e))}" ;;`), "  esac", "}"].join("\n");
  const kinds = optionKinds(list);
  return [
    fn("subs", (e) => e.subs),
    fn("opts", (e) => e.options),
    fn("valopts", (e) => e.valueOptions),
    fn("args", (e) => e.args),
    "__blockkit_optkind() {",
    '  case "$1" in',
    ...[...kinds].map(([flag, kind]) => `    ${flag}) echo ${kind} ;;`),
    "    *) echo none ;;",
    "  esac",
    "}",
    "__blockkit_words() {",
    '  local dir="${XDG_CACHE_HOME:-$HOME/.cache}/blockkit"',
    '  case "$1" in',
    ...Object.entries(WORDS).map(([k, w]) => `    ${k}) echo "${w}" ;;`),
    ...Object.entries(CACHE).map(([k, f]) => `    ${k}) [ -r "$dir/${f}" ] && cat "$dir/${f}" ;;`),
    "  esac",
    "}",
  ].join("\n");
}

/** The walk over the typed words, in the syntax bash and zsh share; sets `cmdpath`, `pos` and `skip`. */
const SH_WALK = `  local cmdpath="" pos=0 skip=0 w i subs
  for ((i = FIRST; i < LAST; i++)); do
    w="\${WORDS[i]}"
    if [ "$skip" = 1 ]; then skip=0; continue; fi
    case "$w" in
      --*=*) ;;
      -*) case " $(__blockkit_valopts "$cmdpath") " in *" $w "*) skip=1 ;; esac ;;
      *)
        subs=" $(__blockkit_subs "$cmdpath") "
        if [[ "$subs" == *" $w "* ]]; then cmdpath="\${cmdpath:+$cmdpath }$w"; pos=0; else pos=$((pos + 1)); fi ;;
    esac
  done
  local kind=none
  if [ "$skip" = 1 ]; then
    kind=$(__blockkit_optkind "\${WORDS[LAST - 1]}")
  elif [[ "$cur" != -* ]]; then
    local -a kinds
    kinds=($(__blockkit_args "$cmdpath"))
    local n=\${#kinds[@]}
    if [ "$n" -gt 0 ]; then
      local k="\${kinds[KINDBASE + (pos < n ? pos : n - 1)]}"
      if [ "$pos" -lt "$n" ] || [[ "$k" == *... ]]; then kind="\${k%...}"; fi
    fi
  fi`;

function bash(list: Entry[]): string {
  const walk = SH_WALK.replace(/WORDS/g, "COMP_WORDS").replace("FIRST", "1").replace("LAST; i++", "COMP_CWORD; i++").replace("LAST - 1", "COMP_CWORD - 1").replace("KINDBASE + ", "");
  return `# bash completion for blockkit (generated by \`blockkit completion bash\`)
# Install: blockkit completion bash > ~/.local/share/bash-completion/completions/blockkit
${shData(list)}
_blockkit() {
  local cur="\${COMP_WORDS[COMP_CWORD]}"
${walk}
  COMPREPLY=()
  if [ "$skip" = 0 ] && [[ "$cur" == -* ]]; then
    COMPREPLY=($(compgen -W "$(__blockkit_opts "$cmdpath")" -- "$cur"))
  elif [ "$kind" = file ]; then
    COMPREPLY=($(compgen -f -- "$cur"))
  else
    local cands="$(__blockkit_words "$kind")"
    [ "$skip" = 0 ] && cands="$cands $(__blockkit_subs "$cmdpath")"
    COMPREPLY=($(compgen -W "$cands" -- "$cur"))
  fi
}
complete -F _blockkit blockkit
`;
}

function zsh(list: Entry[]): string {
  const walk = SH_WALK.replace(/WORDS/g, "words").replace("FIRST", "2").replace("LAST; i++", "CURRENT; i++").replace("LAST - 1", "CURRENT - 1").replace("KINDBASE", "1");
  return `#compdef blockkit
# zsh completion for blockkit (generated by \`blockkit completion zsh\`)
# Install: blockkit completion zsh > "\${fpath[1]}/_blockkit" (or source it after compinit)
${shData(list)}
_blockkit() {
  local cur="\${words[CURRENT]}"
${walk}
  if [ "$skip" = 0 ] && [[ "$cur" == -* ]]; then
    compadd -- $(__blockkit_opts "$cmdpath")
  elif [ "$kind" = file ]; then
    _files
  else
    local -a cands
    cands=($(__blockkit_words "$kind"))
    [ "$skip" = 0 ] && cands+=($(__blockkit_subs "$cmdpath"))
    compadd -- $cands
  fi
}
if [ "\${funcstack[1]}" = "_blockkit" ]; then _blockkit "$@"; else compdef _blockkit blockkit; fi
`;
}

function fish(list: Entry[]): string {
  const fn = (name: string, pick: (e: Entry) => string[]): string =>
    [`function __blockkit_${name}`, "  switch $argv[1]", ...list.map((e) => `    case '${e.path}'\n      echo ${words(pick(e))}`), "  end", "end"].join("\n");
  const kinds = optionKinds(list);
  return `# fish completion for blockkit (generated by \`blockkit completion fish\`)
# Install: blockkit completion fish > ~/.config/fish/completions/blockkit.fish
${fn("subs", (e) => e.subs)}
${fn("opts", (e) => e.options)}
${fn("valopts", (e) => e.valueOptions)}
${fn("args", (e) => e.args)}
function __blockkit_optkind
  switch $argv[1]
${[...kinds].map(([flag, kind]) => `    case -- ${flag}\n      echo ${kind}`).join("\n")}
    case '*'
      echo none
  end
end
function __blockkit_words
  set -l dir (set -q XDG_CACHE_HOME; and echo $XDG_CACHE_HOME; or echo $HOME/.cache)/blockkit
  switch $argv[1]
${Object.entries(WORDS)
  .map(([k, w]) => `    case ${k}\n      string split ' ' -- '${w}'`)
  .join("\n")}
${Object.entries(CACHE)
  .map(([k, f]) => `    case ${k}\n      test -r $dir/${f}; and cat $dir/${f}`)
  .join("\n")}
  end
end
function __blockkit_complete
  set -l tokens (commandline -opc)
  set -l cur (commandline -ct)
  set -l cmdpath ''
  set -l pos 0
  set -l skip 0
  for w in $tokens[2..-1]
    if test $skip = 1
      set skip 0
      continue
    end
    switch $w
      case '--*=*'
      case '-*'
        contains -- $w (string split ' ' -- (__blockkit_valopts "$cmdpath")); and set skip 1
      case '*'
        if contains -- $w (string split ' ' -- (__blockkit_subs "$cmdpath"))
          set cmdpath (string trim -- "$cmdpath $w")
          set pos 0
        else
          set pos (math $pos + 1)
        end
    end
  end
  set -l kind none
  if test $skip = 1
    set kind (__blockkit_optkind $tokens[-1])
  else if not string match -q -- '-*' $cur
    set -l kinds (string split ' ' -- (__blockkit_args "$cmdpath"))
    set -l n (count $kinds)
    if test -n "$kinds[1]"
      set -l k $kinds[(math min $pos + 1, $n)]
      if test $pos -lt $n; or string match -q -- '*...' $k
        set kind (string replace -- '...' '' $k)
      end
    end
  end
  if test $skip = 0; and string match -q -- '-*' $cur
    string split ' ' -- (__blockkit_opts "$cmdpath")
  else if test $kind = file
    __fish_complete_path $cur
  else
    __blockkit_words $kind
    test $skip = 0; and string split ' ' -- (__blockkit_subs "$cmdpath")
  end
end
complete -c blockkit -f -a '(__blockkit_complete)'
`;
}

export function registerCompletion(program: Command, io: CliIO): void {
  program
    .command("completion")
    .description("print a shell completion script (commands, options, profile names, and GUIDs/node ids from your last listings)")
    .argument("<shell>", `one of ${SHELLS.join(", ")}`, (value: string) => {
      if (!(SHELLS as readonly string[]).includes(value)) throw new InvalidArgumentError(`"${value}" is not one of ${SHELLS.join(", ")}`);
      return value;
    })
    .action((shell: Shell) => {
      io.stdout(completionScript(program, shell));
    });
}

/** The completion script of `shell` for the command tree of `program`. */
export function completionScript(program: Command, shell: Shell): string {
  const list = entries(program);
  return shell === "bash" ? bash(list) : shell === "zsh" ? zsh(list) : fish(list);
}
