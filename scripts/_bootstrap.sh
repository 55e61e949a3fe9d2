# Shared by scripts/run, scripts/test and scripts/check: create .venv with Python >= 3.11 and install hermitcrab into it
# with the extras given as $1 (each caller installs [all], every part, plus what it needs on top).
# pip runs only when the checkout changed: a stamp in .venv keeps the hash of pyproject.toml, the extras and the
# installed version, so a second launch starts at once (an editable install sees source edits without pip).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-python3}"
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
  echo "hermitcrab needs Python 3.11 or newer ($PYTHON is $("$PYTHON" --version 2>&1))" >&2
  exit 1
fi
if [ ! -x "$ROOT/.venv/bin/python" ]; then
  "$PYTHON" -m venv "$ROOT/.venv"
  "$ROOT/.venv/bin/python" -m pip install --quiet --upgrade pip
fi
# What the stamp keeps: pyproject.toml, the extras and the installed version (none when hermitcrab is not installed).
_stamp() {
  "$ROOT/.venv/bin/python" - "$ROOT/pyproject.toml" "$1" <<'PY'
import hashlib, importlib.metadata as metadata, sys
try:
    installed = metadata.version("hermitcrab")
except metadata.PackageNotFoundError:
    installed = "none"
with open(sys.argv[1], "rb") as pyproject:
    print(hashlib.sha256(pyproject.read() + f"\n{sys.argv[2]} {installed}".encode()).hexdigest())
PY
}
STAMP="$ROOT/.venv/.hermitcrab-installed-${1//[^a-z,]/}"
if [ ! -f "$STAMP" ] || [ "$(cat "$STAMP")" != "$(_stamp "$1")" ]; then
  "$ROOT/.venv/bin/python" -m pip install --quiet -e "$ROOT$1"
  _stamp "$1" > "$STAMP"
fi
