"""Option allowlists for the allowed programs that can write files, run other programs or change the system.

For each program here every option must be one the policy knows (an unknown or computed one is a miss), values
are read the way getopt reads them (`-oFILE`, `--output=FILE`, `-ro FILE`), and the files an option or operand
writes are reported so the policy can check them against the roots. `sed` scripts are read too: `w`, `e`, `r`
and the `s///w`, `s///e` flags write files, run commands or read files.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from .options import OptionSpec, Parsed, parse_options, spec
from .shell import Word


@dataclass
class Reading:
    """What a program's command line does beyond reading its inputs."""

    problem: str | None = None
    writes: list[Word] = field(default_factory=list[Word])
    makes_links: bool = False  # it may create symlinks that later paths on the line pass through


_SORT = spec(
    "-b -d -f -g -i -M -h -n -R -r -V -c -C -m -s -u -z --ignore-leading-blanks --dictionary-order "
    "--ignore-case --general-numeric-sort --ignore-nonprinting --month-sort --human-numeric-sort --numeric-sort "
    "--random-sort --reverse --version-sort --merge --stable --unique --zero-terminated --debug --help --version "
    "-k= --key= -t= --field-separator= -S= --buffer-size= -o= --output= -T= --temporary-directory= --parallel= "
    "--sort= --random-source= --check?"
)
_UNIQ = spec(
    "-c -d -i -u -z --count --repeated --ignore-case --unique --zero-terminated --help --version -f= -s= -w= "
    "--skip-fields= --skip-chars= --check-chars= -D --all-repeated? --group?",
    numeric=True,
)
_TREE = spec(
    "-a -d -l -f -x -q -N -Q -p -u -g -s -h -D -F -v -t -c -U -r -i -A -S -n -C -J -X --si --du --inodes "
    "--device --dirsfirst --filesfirst --noreport --prune --matchdirs --ignore-case --gitignore --info "
    "--metafirst --condense --help --version -L= -P= -I= -o= --filelimit= --charset= --timefmt= --sort= "
    "--gitfile="
)
_RG = spec(
    "-i -s -S -w -x -v -n -N -l -c -o -F -u -U -P -H -q -a -z -0 -L --hidden --no-ignore --no-ignore-vcs --files "
    "--files-with-matches --files-without-match --count --count-matches --json --no-heading --heading "
    "--line-number --no-line-number --fixed-strings --word-regexp --line-regexp --ignore-case --smart-case "
    "--case-sensitive --invert-match --multiline --follow --stats --null --quiet --trim --vimgrep --column "
    "--with-filename --no-filename --pcre2 --text --only-matching --glob-case-insensitive --no-messages "
    "--type-list --sort-files --help --version -e= -g= -t= -T= -A= -B= -C= -m= -d= -r= -f= -E= -M= -j= "
    "--regexp= --glob= --iglob= --type= --type-not= --after-context= --before-context= --context= "
    "--max-count= --max-depth= --sort= --sortr= --replace= --file= --encoding= --max-columns= --color= "
    "--colors= --threads= --max-filesize= --context-separator= --field-match-separator="
)
_FILE = spec(
    "-b -i -L -h -z -Z -k -r -s -N -n -0 -E -p -v --brief --mime --mime-type --mime-encoding --dereference "
    "--no-dereference --uncompress --keep-going --raw --special-files --no-pad --no-buffer --print0 --extension "
    "--apple --preserve-date --version --help -e= -F= -f= -P= -m= --exclude= --separator= --files-from= "
    "--parameter= --magic-file="
)
_DATE = spec(
    "-R -u --rfc-email --utc --universal --debug --help --version -d= -f= -r= --date= --file= --reference= "
    "--rfc-3339= -I? --iso-8601?"
)
_SED = spec(
    "-n -E -r -s -u -z -b --quiet --silent --debug --posix --regexp-extended --separate --sandbox --unbuffered "
    "--null-data --binary --help --version -e= -l= --expression= --line-length= -i? --in-place?"
)
_TAR = spec(
    "-c -x -t -r -u -A -d -z -j -J -a -Z -v -p -k -O -m -h -S -W -s -l --create --extract --get --list --append "
    "--update --diff --compare --concatenate --catenate --delete --gzip --gunzip --bzip2 --xz --zstd --lzip "
    "--lzma --lzop --auto-compress --verbose --preserve-permissions --same-permissions --keep-old-files "
    "--skip-old-files --overwrite --keep-newer-files --to-stdout --touch --dereference --sparse --totals "
    "--verify --null --one-file-system --recursion --no-recursion --same-order --preserve-order --wildcards "
    "--no-wildcards --anchored --no-anchored --exclude-vcs --exclude-vcs-ignores --exclude-backups "
    "--exclude-caches --no-same-owner --no-same-permissions --numeric-owner --show-transformed-names "
    "--ignore-failed-read --force-local --check-links --help --version --full-time --utc "
    "-f= -C= -X= -b= -H= -K= -N= -V= --file= --directory= --exclude-from= --exclude= "
    "--blocking-factor= --format= --starting-file= --newer= --after-date= --label= --strip-components= "
    "--transform= --xform= --owner= --group= --mode= --mtime= --sort= --warning= --record-size= --newer-mtime="
)
_TAR_WRITERS = frozenset("cruA") | {"--create", "--append", "--update", "--concatenate", "--catenate", "--delete"}
_TAR_EXTRACT = frozenset({"-x", "--extract", "--get"})
_TAR_SHORT_VALUED = frozenset("fCTXbHKNVg")
_XARGS = spec(
    "-0 -p -r -t -x --null --interactive --no-run-if-empty --verbose --exit --show-limits --help --version "
    "-a= -d= -E= -I= -L= -n= -P= -s= --arg-file= --delimiter= --max-lines= --max-args= --max-procs= --max-chars= "
    "-i? -e? -l? --replace? --eof? --max-lines?",
    permute=False,
)
_ENV = spec("-i -0 -v --ignore-environment --null --debug --help --version -u= --unset= -C= --chdir=", permute=False)
MAX_XARGS_PROCS = 8  # `xargs -P`: more at once could exhaust the machine (as root no process limit applies)
_NICE = spec("-n= --adjustment= --help --version", permute=False, numeric=True)
_TIMEOUT = spec(
    "-v --preserve-status --foreground --verbose --help --version -s= -k= --signal= --kill-after=", permute=False
)


def _sort(args: Sequence[Word]) -> Reading:
    parsed = parse_options("sort", args, _SORT)
    writes = parsed.values("-o", "--output", "-T", "--temporary-directory")
    return Reading(parsed.problem, writes)


def _uniq(args: Sequence[Word]) -> Reading:
    parsed = parse_options("uniq", args, _UNIQ)
    if parsed.problem is None and any(w.text is None for w in parsed.operands):
        parsed.problem = "`uniq` gets a computed operand, which may expand into an output file"
    return Reading(parsed.problem, parsed.operands[1:2])


def _tree(args: Sequence[Word]) -> Reading:
    parsed = parse_options("tree", args, _TREE)
    return Reading(parsed.problem, parsed.values("-o"))


def _date(args: Sequence[Word]) -> Reading:
    parsed = parse_options("date", args, _DATE)
    if parsed.problem is None and any(w.text is None or not w.text.startswith("+") for w in parsed.operands):
        parsed.problem = "`date` with an operand that is not a `+FORMAT` sets the system clock"
    return Reading(parsed.problem)


def _plain(name: str, options: OptionSpec) -> Callable[[Sequence[Word]], Reading]:
    return lambda args: Reading(parse_options(name, args, options).problem)


def _sed(args: Sequence[Word]) -> Reading:
    parsed = parse_options("sed", args, _SED)
    if parsed.problem is not None:
        return Reading(parsed.problem)
    scripts = parsed.values("-e", "--expression")
    files = parsed.operands
    if not scripts:
        scripts, files = files[:1], files[1:]
    for script in scripts:
        problem = sed_script_problem(script.text)
        if problem is not None:
            return Reading(problem)
    in_place = parsed.has("-i", "--in-place")
    return Reading(None, list(files) if in_place else [])


def _tar(args: Sequence[Word]) -> Reading:
    words = list(args)
    if words and words[0].text is None:
        return Reading(f"`tar` gets {words[0].raw!r} first, computed at run time where its options stand")
    if words and words[0].text is not None and words[0].text[:1] not in ("-", ""):
        words = _old_style_tar(words)
    parsed = parse_options("tar", words, _TAR)
    if parsed.problem is not None:
        return Reading(parsed.problem)
    names = {name for name, _ in parsed.options}
    creates = any(n.lstrip("-") in _TAR_WRITERS or n in _TAR_WRITERS for n in names)
    extracts = bool(names & _TAR_EXTRACT) and not names & {"-O", "--to-stdout"}
    if extracts:  # an archive names its own paths: a `.git/config` that runs programs, links that lead out
        return Reading("`tar -x` writes whatever paths the archive names, which cannot be checked here", [], True)
    archives = parsed.values("-f", "--file")
    if any(a.text is None or (":" in a.text and "--force-local" not in names) for a in archives):
        return Reading("`tar -f HOST:FILE` runs a remote shell (or the archive name is computed)")
    return Reading(None, archives if creates else [])


def _old_style_tar(words: list[Word]) -> list[Word]:
    """`tar xzf a.tar -C d` is `tar -x -z -f a.tar -C d`: letters first, their values in order after them."""
    letters, rest = words[0].text or "", words[1:]
    out: list[Word] = []
    for letter in letters:
        out.append(Word("-" + letter, "-" + letter))
        if letter in _TAR_SHORT_VALUED and rest:
            out.append(rest[0])
            rest = rest[1:]
    return out + rest


def _xargs(args: Sequence[Word]) -> Reading:
    parsed = parse_options("xargs", args, _XARGS)
    for value in parsed.values("-P", "--max-procs") if parsed.problem is None else []:
        if not (value.text or "").isdigit() or not 1 <= int(value.text or "0") <= MAX_XARGS_PROCS:
            parsed.problem = (
                f"`xargs` would run {value.text or value.raw!r} commands at once (`-P 0`: as many as it can); at "
                f"most {MAX_XARGS_PROCS} pass"
            )
    return Reading(parsed.problem)


def _env(args: Sequence[Word]) -> Reading:
    parsed = parse_options("env", args, _ENV)
    emptied = parsed.operands[:1] and parsed.operands[0].text == "-"  # `env -` is `env -i`
    if parsed.problem is None and (emptied or parsed.has("-i", "--ignore-environment", "-u", "--unset")):
        parsed.problem = "`env -i`/`-u` takes variables from the program, the git hardening (GIT_CONFIG_*) among them"
    return Reading(parsed.problem)


_FIND_VALUED = frozenset(
    [
        "-name",
        "-iname",
        "-path",
        "-ipath",
        "-wholename",
        "-iwholename",
        "-regex",
        "-iregex",
        "-lname",
        "-ilname",
        "-type",
        "-xtype",
        "-size",
        "-mtime",
        "-mmin",
        "-atime",
        "-amin",
        "-ctime",
        "-cmin",
        "-newer",
        "-anewer",
        "-cnewer",
        "-perm",
        "-user",
        "-group",
        "-uid",
        "-gid",
        "-links",
        "-inum",
        "-samefile",
        "-maxdepth",
        "-mindepth",
        "-regextype",
        "-fstype",
        "-used",
        "-printf",
        "-context",
    ]
)
_FIND_FLAGS = frozenset(
    [
        "-print",
        "-print0",
        "-ls",
        "-prune",
        "-quit",
        "-true",
        "-false",
        "-empty",
        "-readable",
        "-writable",
        "-executable",
        "-depth",
        "-follow",
        "-xdev",
        "-mount",
        "-noleaf",
        "-daystart",
        "-nouser",
        "-nogroup",
        "-ignore_readdir_race",
        "-noignore_readdir_race",
        "-warn",
        "-nowarn",
        "-not",
        "!",
        "-a",
        "-and",
        "-o",
        "-or",
        "(",
        ")",
        ",",
        "-d",
        "-help",
        "--help",
        "-version",
        "--version",
    ]
)
_FIND_EXEC = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
_FIND_NEWER = re.compile(r"^-newer[aBcmt][aBcmt]$")


def _find(args: Sequence[Word]) -> Reading:
    index = 0
    while index < len(args) and args[index].text in ("-H", "-L", "-P"):
        index += 1
    while index < len(args):  # starting points: anything that is not a predicate
        text = args[index].text
        if text is None:
            return Reading(f"`find` gets {args[index].raw!r}, computed at run time where a predicate may stand")
        if text.startswith("-") or text in ("!", "(", ")", ","):
            break
        index += 1
    while index < len(args):
        text, index = args[index].text, index + 1
        if text in _FIND_EXEC:
            while index < len(args) and args[index].text not in (";", "+"):
                index += 1
            index += 1
        elif text in _FIND_VALUED or (text is not None and _FIND_NEWER.match(text)):
            index += 1
        elif text not in _FIND_FLAGS:
            shown = args[index - 1].raw
            return Reading(f"`find {shown}` is not a predicate the policy knows to be safe (or it is computed)")
    return Reading()


PROGRAMS: dict[str, Callable[[Sequence[Word]], Reading]] = {
    "sort": _sort,
    "uniq": _uniq,
    "tree": _tree,
    "rg": _plain("rg", _RG),
    "file": _plain("file", _FILE),
    "date": _date,
    "sed": _sed,
    "tar": _tar,
    "xargs": _xargs,
    "env": _env,
    "nice": _plain("nice", _NICE),
    "timeout": _plain("timeout", _TIMEOUT),
    "find": _find,
}


def reading(name: str, args: Sequence[Word]) -> Reading | None:
    """What `name args` does, for the programs with an option allowlist here; None for the others."""
    handler = PROGRAMS.get(name)
    return None if handler is None else handler(args)


def checked_options(name: str, args: Sequence[Word]) -> Parsed | None:
    """The parsed options of a wrapper (xargs, env, nice, timeout), to find the command it runs."""
    table = {"xargs": _XARGS, "env": _ENV, "nice": _NICE, "timeout": _TIMEOUT}
    return parse_options(name, args, table[name]) if name in table else None


_SED_SIMPLE = set("pdqQnNgGhHxlzPD=F{}!")
_SED_FLAGS = set("gpiImM0123456789")


def sed_script_problem(script: str | None) -> str | None:
    """Why a sed script may run a command, write or read a file (`e`, `w`, `W`, `r`, `R`, `s///w`, `s///e`),
    or None when it only edits its input. Anything the scanner does not understand is a problem too."""
    if script is None:
        return "the `sed` script is computed at run time"
    text, index = script, 0
    while index < len(text):
        char = text[index]
        if char in " \t\n;" or char.isdigit() or char in "$,~+":
            index += 1
        elif char == "/" or (char == "\\" and index + 1 < len(text)):
            start = index + 1 if char == "/" else index + 2
            index = _delimited(text, start, text[start - 1], regex=True)
        elif char == "#" or char in "aic":
            index = _line_end(text, index)
        elif char in "btT:":
            index = _label_end(text, index + 1)
        elif char in _SED_SIMPLE:
            index += 1
        elif char in "sy" and index + 1 < len(text):
            delimiter = text[index + 1]
            pattern_end = _delimited(text, index + 2, delimiter, regex=char == "s")  # `y` has no brackets
            index = _delimited(text, pattern_end, delimiter, regex=False)
            while 0 <= index < len(text) and char == "s" and text[index] not in " \t\n;}":
                if text[index] not in _SED_FLAGS:
                    return f"the `sed` flag `{text[index]}` in {script!r} writes a file or runs a command"
                index += 1
        else:
            return f"the `sed` command `{char}` in {script!r} writes or reads a file, or runs a command"
        if index < 0:
            return f"the `sed` script {script!r} could not be read"
    return None


def _delimited(text: str, index: int, delimiter: str, *, regex: bool) -> int:
    """Just past the unescaped `delimiter` closing a regex or replacement that starts at `index` (-1: none).
    As in GNU sed, only a regex has bracket expressions, in which the delimiter is literal: `y|[|x|;e cmd #]|x|`
    is a `y` and then an `e`."""
    if index < 0:
        return -1
    while index < len(text):
        char = text[index]
        if char == "\\":
            index += 2
        elif char == "[" and regex and delimiter != "[":
            index = _bracket_end(text, index + 1)
            if index < 0:
                return -1
        elif char == delimiter:
            return index + 1
        elif char == "\n":
            return -1
        else:
            index += 1
    return -1


def _bracket_end(text: str, index: int) -> int:
    """Just past the `]` closing a bracket expression whose body starts at `index` (-1: none), as GNU sed reads
    it: a `]` first (after an optional `^`) is literal, a backslash is literal, `[:x:]`, `[.x.]`, `[=x=]` nest."""
    index += text[index : index + 1] == "^"
    index += text[index : index + 1] == "]"
    while index < len(text):
        char = text[index]
        if char == "]":
            return index + 1
        if char == "\n":
            return -1
        if char == "[" and text[index + 1 : index + 2] in (":", ".", "="):
            close = text.find(text[index + 1] + "]", index + 2)
            if close < 0:
                return -1
            index = close + 2
        else:
            index += 1
    return -1


def _line_end(text: str, index: int) -> int:
    newline = text.find("\n", index)
    return len(text) if newline < 0 else newline


def _label_end(text: str, index: int) -> int:
    while index < len(text) and text[index] not in ";\n":
        index += 1
    return index
