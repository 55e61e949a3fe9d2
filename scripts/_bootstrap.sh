# Shared by scripts/run, scripts/test and scripts/check: create .venv with Python >= 3.11 and install hermitcrab into it
# with the extras given as $1 (each caller installs [all], every part, plus what it needs on top).
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
"$ROOT/.venv/bin/python" -m pip install --quiet -e "$ROOT$1"
