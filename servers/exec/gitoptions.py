"""The options each git subcommand may be given without asking: everything else is a miss (see gitrules.py).

Options that make git run a program, sign with gpg, use a template or another git directory are left out on
purpose (`--exec`, `-x`, `-S`, `--gpg-sign`, `--upload-pack`, `--template`, `--ext-diff`, `--textconv`, ...).
"""

from __future__ import annotations

from .options import OptionSpec, spec

_DIFF = (
    "-p -u -s -t -z -a -b -w -R -D -W --patch --no-patch --raw --patch-with-raw --patch-with-stat --numstat "
    "--shortstat --summary --name-only --name-status --no-renames --full-index --binary --find-copies-harder "
    "--irreversible-delete --text --ignore-cr-at-eol --ignore-space-at-eol --ignore-space-change "
    "--ignore-all-space --ignore-blank-lines --minimal --patience --histogram --no-color --no-ext-diff "
    "--no-textconv --no-prefix --default-prefix --exit-code --quiet --cached --staged --merge-base --no-index "
    "--check --compact-summary --function-context --ita-invisible-in-index --pickaxe-all --pickaxe-regex "
    "--indent-heuristic --no-indent-heuristic --no-color-moved --full-diff --cumulative "
    "--inter-hunk-context= --diff-filter= -S= -G= -O= -I= --ignore-matching-lines= --ws-error-highlight= "
    "--anchored= --diff-algorithm= --line-prefix= --src-prefix= --dst-prefix= --color-moved-ws= --output= "
    "--abbrev? -B? -M? -C? --find-renames? --find-copies? --break-rewrites? --color? --word-diff? "
    "--word-diff-regex? --color-words? --ignore-submodules? --relative? --submodule? --color-moved? --stat? "
    "--dirstat? -U? --unified? -X?"
)
_LOG = _DIFF + (
    " -i -E -F -g -m -c -L= -n= --oneline --graph --all --no-decorate --abbrev-commit --no-abbrev-commit "
    "--all-match --invert-grep --regexp-ignore-case --extended-regexp --fixed-strings --basic-regexp "
    "--perl-regexp --reverse --merges --no-merges --first-parent --follow --source --left-right --cherry-pick "
    "--cherry-mark --cherry --boundary --simplify-by-decoration --full-history --dense --sparse "
    "--simplify-merges --ancestry-path --topo-order --date-order --author-date-order --relative-date --parents "
    "--children --walk-reflogs --no-notes --mailmap --no-mailmap --use-mailmap --no-use-mailmap --log-size "
    "--cc --remerge-diff --no-min-parents --no-max-parents --no-expand-tabs --count --not --clear-decorations "
    "--show-pulls --stdin --no-walk --do-walk --left-only --right-only --bisect --single-worktree --reflog "
    "--format= --date= --since= --after= --until= --before= --author= --committer= --grep= --grep-reflog= "
    "--max-count= --skip= --glob= --exclude= --diff-merges= --min-parents= --max-parents= --encoding= "
    "--decorate-refs= --decorate-refs-exclude= --since-as-filter= --max-age= --min-age= "
    "--decorate? --pretty? --branches? --tags? --remotes? --notes? --expand-tabs? --show-linear-break? "
    "--show-notes? --ancestry-path?"
)
_COMMITISH = "-q --quiet --progress --no-progress --recurse-submodules --no-recurse-submodules"
_PATHSPEC = "--pathspec-from-file= --pathspec-file-nul"
_PICK = (
    "-e -x -r -n -s --edit --no-commit --signoff --ff --allow-empty --allow-empty-message "
    "--keep-redundant-commits --rerere-autoupdate --no-rerere-autoupdate --continue --skip --quit --abort "
    "-m= --mainline= --cleanup= --empty= --strategy= -X= --strategy-option="
)
_MERGE = (
    "-e -n -v -q --commit --no-commit --edit --no-edit --ff --no-ff --ff-only --no-log --signoff --no-signoff "
    "--stat --no-stat --squash --no-squash --verify --no-verify --summary --no-summary --quiet --verbose "
    "--progress --no-progress --autostash --no-autostash --allow-unrelated-histories --rerere-autoupdate "
    "--no-rerere-autoupdate --overwrite-ignore --no-overwrite-ignore --abort --quit --continue "
    "-m= -F= -s= -X= --file= --cleanup= --strategy= --strategy-option= --log?"
)
_FETCH = (
    "-a -f -k -p -P -n -t -q -v -4 -6 --all --append --atomic --unshallow --update-shallow --negotiate-only "
    "--dry-run --porcelain --write-fetch-head --no-write-fetch-head --force --keep --multiple "
    "--auto-maintenance --no-auto-maintenance --auto-gc --no-auto-gc --write-commit-graph "
    "--no-write-commit-graph --prefetch --prune --prune-tags --no-tags --refetch --tags "
    "--no-recurse-submodules --set-upstream --quiet --verbose --progress --no-progress --show-forced-updates "
    "--no-show-forced-updates --ipv4 --ipv6 --depth= --deepen= --shallow-since= --shallow-exclude= "
    "--negotiation-tip= --refmap= -j= --jobs= -o= --server-option= --recurse-submodules?"
)
_SPECS: dict[str, str] = {
    "log": _LOG,
    "show": _LOG,
    "whatchanged": _LOG,
    "rev-list": _LOG,
    "shortlog": _LOG.replace(" -n= ", " -n ") + " -s -e -w? --numbered --summary --email --committer --group=",
    "diff": _DIFF,
    "diff-tree": _DIFF + " -r -m -c --root --stdin --no-commit-id --always --cc --pretty? --format=",
    "diff-index": _DIFF + " -m",
    "diff-files": _DIFF + " -0 -1 -2 -3 -c --cc -q --base --ours --theirs",
    "range-diff": _DIFF + " --no-dual-color --creation-factor= --left-only --right-only --no-notes",
    "format-patch": _DIFF
    + " -n -N -k --numbered --no-numbered --numbered-files --keep-subject --signoff --stdout --cover-letter "
    "--no-cover-letter --no-thread --no-signature --zero-commit --progress --no-binary -o= --output-directory= "
    "--start-number= --subject-prefix= -v= --reroll-count= --to= --cc= --in-reply-to= --suffix= --signature= "
    "--base= --interdiff= --range-diff= --creation-factor= --rfc? --from? --thread?",
    "status": "-s -b -v -z --short --branch --long --verbose --show-stash --no-column --ahead-behind "
    "--no-ahead-behind --renames --no-renames --porcelain? -u? --untracked-files? --ignored? --ignore-submodules? "
    "--column? --find-renames?",
    "add": "-n -v -f -p -e -u -A -N --dry-run --verbose --force --patch --edit --update --all --no-ignore-removal "
    "--no-all --ignore-removal --intent-to-add --refresh --ignore-errors --ignore-missing --sparse "
    "--no-warn-embedded-repo --renormalize --chmod= " + _PATHSPEC,
    "commit": "-a -p -s -n -e -i -o -v -q -z --all --patch --reset-author --short --branch --porcelain --long "
    "--null --signoff --no-signoff --no-verify --verify --allow-empty --allow-empty-message --edit --no-edit "
    "--amend --no-post-rewrite --include --only --verbose --quiet --dry-run --status --no-status --no-gpg-sign "
    "-C= -c= -F= -m= --reuse-message= --reedit-message= --fixup= --squash= --file= --author= --date= "
    "--message= --trailer= --cleanup= -u? --untracked-files? " + _PATHSPEC,
    "branch": "-d -D -f -m -M -c -C -l -a -r -v -q -t -i --delete --force --move --copy --list --all --remotes "
    "--verbose --quiet --show-current --no-color --no-column --no-abbrev --track --no-track --unset-upstream "
    "--ignore-case --omit-empty --create-reflog --recurse-submodules --sort= --format= --abbrev= -u= "
    "--set-upstream-to= --points-at= --contains? --no-contains? --merged? --no-merged? --color? --column?",
    "checkout": _COMMITISH + " -f -l -m -p --force --ours --theirs --no-track --guess --no-guess --detach "
    "--ignore-skip-worktree-bits --merge --patch --ignore-other-worktrees --overwrite-ignore "
    "--no-overwrite-ignore --overlay --no-overlay -b= -B= --orphan= --conflict= -t --track? " + _PATHSPEC,
    "switch": _COMMITISH + " -d -f -m -t --detach --guess --no-guess --force --discard-changes --merge "
    "--no-track --ignore-other-worktrees -c= -C= --create= --force-create= --conflict= --orphan= --track?",
    "restore": _COMMITISH + " -p -W -S -m --patch --worktree --staged --ours --theirs --merge --ignore-unmerged "
    "--ignore-skip-worktree-bits --overlay --no-overlay -s= --source= --conflict= " + _PATHSPEC,
    "reset": "-q -N -p --soft --mixed --hard --merge --keep --quiet --no-refresh --refresh --intent-to-add "
    "--patch --recurse-submodules --no-recurse-submodules " + _PATHSPEC,
    "stash": "-p -k -u -a -q -S --patch --keep-index --no-keep-index --include-untracked --all --quiet --index "
    "--staged -m= --message= " + _PATHSPEC + " " + _DIFF,
    "rev-parse": "-q --show-toplevel --git-dir --git-common-dir --is-inside-work-tree --is-inside-git-dir "
    "--is-bare-repository --is-shallow-repository --show-prefix --show-cdup --verify --symbolic "
    "--symbolic-full-name --all --quiet --sq --not --local-env-vars --show-superproject-working-tree "
    "--absolute-git-dir --sq-quote --revs-only --no-revs --flags --no-flags --default= --prefix= --git-path= "
    "--since= --until= --disambiguate= --glob= --exclude= --abbrev-ref? --short? --branches? --tags? "
    "--remotes? --show-object-format? --path-format=",
    "ls-files": "-c -d -m -o -i -s -u -k -z -t -v -f --cached --deleted --modified --others --ignored --stage "
    "--unmerged --killed --directory --no-empty-directory --eol --deduplicate --exclude-standard "
    "--error-unmatch --full-name --recurse-submodules --debug --sparse -x= -X= --exclude= --exclude-from= "
    "--exclude-per-directory= --with-tree= --format= --abbrev?",
    "ls-tree": "-d -r -t -l -z --long --name-only --name-status --object-only --full-name --full-tree "
    "--format= --abbrev?",
    "blame": "-b -f -n -p -c -t -l -s -e -w --root --show-stats --show-name --show-number --porcelain "
    "--line-porcelain --show-email --incremental --progress --no-progress --first-parent --color-lines "
    "--color-by-age --minimal -L= -S= --reverse= --contents= --date= --encoding= --ignore-rev= "
    "--ignore-revs-file= --abbrev= -M? -C?",
    "grep": "-a -i -I -r -w -v -h -H -E -G -P -F -n -l -L -z -o -c -p -W -q --text --no-textconv --ignore-case "
    "--recursive --no-recursive --word-regexp --invert-match --full-name --extended-regexp --basic-regexp "
    "--perl-regexp --fixed-strings --line-number --column --files-with-matches --name-only "
    "--files-without-match --null --only-matching --count --no-color --break --heading --show-function "
    "--function-context --and --or --not --all-match --quiet --cached --untracked --no-index "
    "--exclude-standard --no-exclude-standard --recurse-submodules -e= -f= -A= -B= -C= -m= --max-depth= "
    "--after-context= --before-context= --context= --threads= --max-count= --color?",
    "tag": "-a -f -d -l -n -e -i --annotate --force --delete --list --edit --create-reflog --ignore-case "
    "--no-column --omit-empty -m= -F= --message= --file= --sort= --format= --cleanup= --points-at= "
    "--contains? --no-contains? --merged? --no-merged? --column? --color? -n?",
    "remote": "-v -f -n -p --verbose --tags --no-tags --push --all --dry-run --prune --add --delete --auto "
    "-t= -m= --mirror?",
    "merge": _MERGE,
    "pull": _FETCH + " " + _MERGE + " -r --no-rebase --rebase?",
    "fetch": _FETCH,
    "push": "-n -d -f -u -q -v -4 -6 --all --branches --prune --mirror --dry-run --porcelain --delete --tags "
    "--follow-tags --no-follow-tags --atomic --no-atomic --force --force-if-includes --no-force-if-includes "
    "--set-upstream --thin --no-thin --quiet --verbose --progress --no-recurse-submodules --verify --no-verify "
    "--ipv4 --ipv6 -o= --push-option= --repo= --recurse-submodules= --force-with-lease?",
    "cherry-pick": _PICK,
    "revert": _PICK,
    "rebase": "-m -q -v -n -f -i -r --keep-base --continue --skip --abort --quit --edit-todo "
    "--show-current-patch --apply --merge --keep-empty --no-keep-empty --reapply-cherry-picks "
    "--no-reapply-cherry-picks --allow-empty-message --quiet --verbose --stat --no-stat --no-verify --verify "
    "--ignore-whitespace --committer-date-is-author-date --ignore-date --reset-author-date --signoff "
    "--interactive --fork-point --no-fork-point --root --autosquash --no-autosquash --autostash --no-autostash "
    "--update-refs --no-update-refs --no-ff --force-rebase --onto= --empty= -s= --strategy= -X= "
    "--strategy-option= -C= --whitespace= --rebase-merges?",
    "describe": "--all --tags --contains --exact-match --debug --long --always --first-parent --abbrev= "
    "--candidates= --match= --exclude= --dirty? --broken?",
    "clean": "-d -f -i -n -q -x -X --force --interactive --dry-run --quiet -e= --exclude=",
    "mv": "-f -k -n -v --force --dry-run --verbose --sparse",
    "rm": "-f -n -r -q --force --dry-run --cached --ignore-unmatch --sparse --quiet " + _PATHSPEC,
    "init": "-q --quiet --bare --object-format= -b= --initial-branch= --shared?",
    "clone": "-l -s -q -v -n --local --no-local --no-hardlinks --shared --quiet --verbose --progress "
    "--no-checkout --bare --mirror --single-branch --no-single-branch --no-tags --tags --shallow-submodules "
    "--no-shallow-submodules --remote-submodules --no-remote-submodules --sparse --also-filter-submodules "
    "--reject-shallow --no-reject-shallow --dissociate -o= --origin= -b= --branch= --revision= --depth= "
    "--shallow-since= --shallow-exclude= -j= --jobs= --filter= --reference= --reference-if-able= "
    "--recurse-submodules?",
    "apply": "-3 -R -z -v -q --stat --numstat --summary --check --index --cached --intent-to-add --3way --ours "
    "--theirs --union --reverse --reject --inaccurate-eof --recount --unidiff-zero --apply --no-add "
    "--allow-binary-replacement --binary --ignore-space-change --ignore-whitespace --verbose --quiet "
    "--allow-empty --build-fake-ancestor= -p= -C= --exclude= --include= --whitespace= --directory=",
    "worktree": "-f -q -v -n -z --force --detach --checkout --no-checkout --lock --quiet --track --no-track "
    "--guess-remote --no-guess-remote --orphan --porcelain --verbose --dry-run -b= -B= --reason= --expire=",
    "reflog": _LOG + " --all --single-worktree --expire= --expire-unreachable= --rewrite --updateref "
    "--stale-fix --dry-run --verbose",
    "show-ref": "-q -s -d --head --branches --heads --tags --verify --dereference --hash? --abbrev? --quiet "
    "--exclude-existing? --exists",
    "for-each-ref": "--shell --perl --python --tcl --ignore-case --omit-empty --count= --sort= --format= "
    "--points-at= --exclude= --merged? --no-merged? --contains? --no-contains?",
    "cat-file": "-t -s -e -p --textconv? --filters? --batch? --batch-check? --batch-command? --batch-all-objects "
    "--buffer --unordered --follow-symlinks -Z -z --allow-unknown-type --path=",
    "merge-base": "-a --all --octopus --independent --is-ancestor --fork-point",
    "count-objects": "-v -H --verbose --human-readable",
    "version": "--build-options",
    "var": "-l",
    "check-ignore": "-q -v -n -z --quiet --verbose --stdin --non-matching --no-index",
    "check-attr": "-a -z --all --cached --stdin --source=",
    "ls-remote": "-h -t -q --heads --branches --tags --refs --symref --quiet --exit-code --get-url --sort= "
    "-o= --server-option=",
    "name-rev": "--tags --all --stdin --annotate-stdin --name-only --no-undefined --always --refs= --exclude=",
    "show-branch": "-a -r --all --remotes --topo-order --date-order --current --sha1-name --list "
    "--independent --merge-base --no-name --sparse --more? --reflog?",
    "cherry": "-v --abbrev?",
    "bisect": "--no-checkout --first-parent --term-old= --term-new= --term-good= --term-bad=",
    "gc": "--aggressive --auto --quiet --no-prune --force --keep-largest-pack --prune?",
    "fsck": "--unreachable --dangling --no-dangling --root --tags --cache --no-reflogs --full --no-full "
    "--connectivity-only --strict --verbose --lost-found --name-objects --progress --no-progress",
    "repack": "-a -A -d -f -F -q -n -l -b --quiet --local --write-bitmap-index --window= --depth= --geometric= "
    "--cruft --threads= --max-pack-size=",
    "submodule": "-q -N -f -n --quiet --recursive --init --remote --checkout --rebase --merge --no-fetch "
    "--cached --files --force --all --single-branch --no-single-branch --depth= -j= --jobs= --reference= "
    "--filter= --summary-limit=",
    "sparse-checkout": "--cone --no-cone --sparse-index --no-sparse-index --stdin --skip-checks",
    "hash-object": "-w --stdin --stdin-paths --no-filters --literally -t= --path=",
    "am": "-s -k -3 -q -i --signoff --keep --keep-non-patch --3way --quiet --utf8 --no-utf8 --continue --skip "
    "--abort --quit --reject --interactive --committer-date-is-author-date --ignore-date --ignore-whitespace "
    "--ignore-space-change --show-current-patch? -p= -C= --directory= --exclude= --include= --patch-format= "
    "--whitespace= --empty=",
    "archive": "-l -v --list --verbose --worktree-attributes --format= --prefix= -o= --output= --add-file= "
    "--add-virtual-file=",
    "bundle": "-q --quiet --progress --all --branches --tags --version=",
    "notes": "-f -m= -F= -C= -c= --ref= --allow-empty --force --message= --file= --reuse-message= --reedit-message=",
    "verify-commit": "-v --verbose --raw",
    "verify-tag": "-v --verbose --raw --format=",
    "annotate": "-b -f -n -p -c -t -l -s -e -w --root -L= -S= --contents= --date= --encoding= -M? -C?",
}
_NUMERIC = frozenset({"log", "show", "whatchanged", "rev-list", "shortlog", "reflog", "format-patch"})
SPECS: dict[str, OptionSpec] = {name: spec(text, numeric=name in _NUMERIC) for name, text in _SPECS.items()}
