#!/usr/bin/env bash
# The checked build: compile every kernel with bounds checking, wraparound
# checks, initializedcheck and -O0 -g (setup.py switches them on under
# CYGRAD_DEBUG=1), in a copy of the tree so the optimised in-place build is
# left alone, and run the whole test suite against it.
#
# Usage: bash .ci/checked_build.sh [extra pytest args]
#   CYGRAD_CHECKED_DIR=dir   build there (default: a fresh temporary directory,
#                            removed afterwards unless CYGRAD_KEEP_CHECKED=1)
# Uses the `python` on PATH (.ci/run calls it inside its venv); installs the
# build requirements of pyproject.toml into it when they are missing.
set -euo pipefail
cd "$(dirname "$0")/.."
SRC=$(pwd)
DEST=${CYGRAD_CHECKED_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/cygrad-checked.XXXXXX")}
if [ -z "${CYGRAD_CHECKED_DIR:-}" ] && [ "${CYGRAD_KEEP_CHECKED:-0}" = "0" ]; then
    trap 'rm -rf "$DEST"' EXIT
fi
mkdir -p "$DEST"

echo "== checked build: copying the tree to $DEST"
# Tracked files plus untracked ones that are not ignored (so a working tree
# is tested as it is); never build outputs (*.so, *.c, generated .pyx).
python - "$SRC" "$DEST" <<'EOF'
import os, shutil, subprocess, sys
src, dest = sys.argv[1], sys.argv[2]
try:
    out = subprocess.run(
        ["git", "-C", src, "ls-files", "-z", "--cached", "--others",
         "--exclude-standard"], check=True, capture_output=True).stdout
    files = [f for f in out.decode().split("\0") if f]
except (OSError, subprocess.CalledProcessError):
    files = []
    for root, dirs, names in os.walk(src):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d != "build"]
        files += [os.path.relpath(os.path.join(root, n), src) for n in names]
skip = (".so", ".c", ".pyc")
n = 0
for f in files:
    p = os.path.join(src, f)
    if f.endswith(skip) or not os.path.isfile(p) or f.startswith(".ci-venv"):
        continue
    os.makedirs(os.path.dirname(os.path.join(dest, f)), exist_ok=True)
    shutil.copy2(p, os.path.join(dest, f))
    n += 1
print(f"copied {n} files")
EOF

python - <<'EOF' || python -m pip install --quiet "setuptools>=64" wheel "Cython>=3.0" "numpy>=2.0"
import Cython, numpy, setuptools  # noqa: F401
assert int(Cython.__version__.split(".")[0]) >= 3
EOF

echo "== checked build: compiling with CYGRAD_DEBUG=1"
start=$(date +%s)
(cd "$DEST" && CYGRAD_DEBUG=1 CYGRAD_BUILD_JOBS="${CYGRAD_BUILD_JOBS:-2}" \
    python setup.py -q build_ext --inplace >"$DEST/checked-build.log" 2>&1) || {
    tail -50 "$DEST/checked-build.log"
    echo "checked build failed"
    exit 1
}
echo "compiled in $(( $(date +%s) - start )) s"

# Make sure the copy is what the tests import, and that it is the checked build.
(cd "$DEST" && PYTHONPATH="$DEST" python - "$DEST" <<'EOF'
import glob, os, sys
dest = os.path.realpath(sys.argv[1])
import cygrad
from cygrad._kernels import engine
where = os.path.realpath(engine.__file__)
assert where.startswith(dest + os.sep), f"tests would import {where}, not {dest}"
cfiles = glob.glob(os.path.join(dest, "build", "cython.*-debug", "cygrad", "_kernels", "*.c"))
assert cfiles, "no generated C under build/cython.*-debug (see setup.py)"
for c in cfiles:
    if os.path.basename(c) == "_cyutility.c":
        continue  # Cython's shared utility code (setup.py): no cygrad code to check
    with open(c) as f:
        head = f.read(4096)
    assert '"-O0"' in head, f"{c} was not compiled with CYGRAD_DEBUG=1"
print("testing", where)
EOF
)

echo "== checked build: whole test suite"
start=$(date +%s)
status=0
(cd "$DEST" && PYTHONPATH="$DEST" python -m pytest -q -p no:cacheprovider "$@") \
    || status=$?
echo "checked-build tests took $(( $(date +%s) - start )) s"
exit $status
