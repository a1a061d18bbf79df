#!/usr/bin/env bash
# The wheel works anywhere: built from this tree, installed with its base dependencies only
# (the analysis) into a new virtualenv outside the repository, and run from an empty folder:
# the bias report on the shared PandaLM data, pairlab.rate in Python, a one-line answer from a
# command whose extra is missing, and neither torch nor gradio installed.
#   PYTHON=.venv/bin/python tests/wheel_check.sh      (VOTES: the data folder, default ../shared/data/pandalm)
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
python="${PYTHON:-python3.11}"
votes="$(cd "${VOTES:-$repo/../shared/data/pandalm}" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
unset PYTHONPATH  # the installed wheel, not this checkout, must answer

echo "wheel-check: building the wheel"
rm -rf "$repo/build"  # files left there by an earlier build would ride along in the wheel
# (pip.conf may name local indexes absent here: pip's warning about each is left out.)
quiet() { "$@" 2> >(grep -v "is ignored: it is neither a file nor a directory" >&2); }
quiet "$python" -m pip wheel --no-deps -q -w "$work/dist" "$repo"
rm -rf "$repo/build"
wheel=$(ls "$work"/dist/pairlab-*.whl)
for name in pairlab/data/models.toml pairlab/data/arena.toml pairlab/data/prompts.jsonl \
            pairlab/data/alpaca_eval_instruction_difficulty.csv analysis/report/templates/report.html.j2; do
    "$python" -c "import sys, zipfile; sys.exit(sys.argv[2] not in zipfile.ZipFile(sys.argv[1]).namelist())" \
        "$wheel" "$name" || { echo "wheel-check: $name is not in the wheel" >&2; exit 1; }
done

echo "wheel-check: installing it with its base dependencies into a new virtualenv"
# --no-compile: bytecode for the modules the check imports is written as they are imported.
# uv where the project's venv has it (the Makefile installs it): it resolves the same base
# dependencies from the same indexes as pip, in a sixth of pip's time.
uv="$(dirname "$python")/uv"
if [ -x "$uv" ]; then
    "$python" -m venv --without-pip "$work/venv"
    "$uv" pip install -q --python "$work/venv/bin/python" --no-compile "$wheel"
else
    "$python" -m venv "$work/venv"
    quiet "$work/venv/bin/python" -m pip install -q --disable-pip-version-check --no-compile "$wheel"
fi
bin="$work/venv/bin"

mkdir "$work/empty" && cd "$work/empty"
"$bin/pairlab" report --votes "$votes" --out report --quiet --bootstrap 100 --rating-bootstrap 50 2> report.log \
    || { cat report.log >&2; exit 1; }
test -s report/report.json && test -s report/report.html && test -s report/report.md
"$bin/python" -c "import pairlab; print(pairlab.rate('$votes').to_string(index=False))" 2>/dev/null

# A command whose extra is missing: one line naming what to install, exit 2, no traceback.
missing() {  # EXTRA COMMAND...
    local extra=$1 code; shift
    set +e; "$bin/pairlab" "$@" > out.txt 2>&1; code=$?; set -e
    if [ "$code" != 2 ] || [ "$(wc -l < out.txt)" != 1 ] || ! grep -q "pip install 'pairlab\[$extra\]'" out.txt; then
        echo "wheel-check: 'pairlab $*' without pairlab[$extra] answered (exit $code):" >&2; cat out.txt >&2; exit 1
    fi
    echo "wheel-check: $(cat out.txt)"
}
missing models generate --prompts "$repo/data/prompts.jsonl" --models gemma3-270m,gguf:/dev/null --out pairs.jsonl
missing arena arena
# --help is the documentation: it answers without the extras.
"$bin/pairlab" arena --help > help.txt 2>&1 && grep -q "^usage: pairlab arena" help.txt \
    || { echo "wheel-check: 'pairlab arena --help' on the base install answered:" >&2; cat help.txt >&2; exit 1; }
echo "wheel-check: pairlab arena --help answers on the base install"
"$bin/python" - <<'PY'
import importlib.util, sys
installed = [m for m in ("torch", "gradio", "transformers", "sqlalchemy") if importlib.util.find_spec(m)]
sys.exit(f"wheel-check: the base install pulled {installed}" if installed else 0)
PY
if [ -e "$work/empty/arena.db" ] || ls "$work"/venv/lib/python*/site-packages/pairlab/data/*.db 2>/dev/null; then
    echo "wheel-check: a vote store was created" >&2; exit 1
fi
echo "wheel-check: ok ($(du -sh "$work/venv" | cut -f1) installed)"
