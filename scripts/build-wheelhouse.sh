#!/usr/bin/env bash
# Build a wheelhouse for installing autotune on a GPU node with no internet.
#
#   scripts/build-wheelhouse.sh [--lean] [DIR]       (DIR defaults to ./wheelhouse)
#
# On the connected machine this downloads wheels for the node's Python (PYVER, default 3.12)
# and platform (x86_64 manylinux), and builds autotune's own wheel. Copy DIR to the node and
#   python3 -m pip install --no-index --find-links DIR autotune        (full wheelhouse)
# With --lean only the pure-Python packages a CUDA image usually lacks are kept (optuna,
# sqlite-utils and their needs: sqlalchemy, alembic, mako, greenlet, colorlog, sqlite-fts4,
# click-default-group; pytest-xdist and execnet, which the test settings use); numpy, cuda-python, NVRTC, cuBLAS, jinja2, click, tqdm are expected
# on the node already. Install a lean wheelhouse with
#   python3 -m pip install --no-index --no-deps DIR/*.whl
set -euo pipefail
lean=0
if [[ "${1:-}" == "--lean" ]]; then lean=1; shift; fi
dir="${1:-wheelhouse}"
pyver="${PYVER:-3.12}"
mkdir -p "$dir"
platforms=()
for p in manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64 manylinux1_x86_64 linux_x86_64; do
  platforms+=(--platform "$p")
done
fetch() {
  python3 -m pip download --quiet --only-binary=:all: --python-version "$pyver" --implementation cp \
    "${platforms[@]}" -d "$dir" "$@"
}
if (( lean )); then
  fetch optuna sqlite-utils pytest-xdist
  # keep what a CUDA image lacks; drop what it has (the node's own versions are used)
  keep='^(optuna|sqlite_utils|sqlalchemy|SQLAlchemy|alembic|mako|Mako|greenlet|colorlog|sqlite_fts4|click_default_group|pytest_xdist|execnet)-'
  for whl in "$dir"/*.whl; do
    name=$(basename "$whl")
    [[ "$name" =~ $keep ]] || rm -f "$whl"
  done
else
  fetch optuna sqlite-utils numpy jinja2 click tqdm "cuda-core>=1.2" "cuda-bindings>=13.0,<14" cuda-pathfinder \
    "nvidia-cuda-nvrtc>=13.0,<14" "nvidia-cublas>=13.0,<14"
fi
# autotune's own wheel without its optional C extension (setup.py): a wheel built here for this machine's Python
# would not install on the node's; pure Python, it installs on any (the node builds the extension from source)
export AUTOTUNE_PURE_PYTHON=1
python3 -m pip wheel --quiet --no-deps --no-build-isolation -w "$dir" "$(dirname "$0")/.." 2>/dev/null \
  || python3 -m pip wheel --quiet --no-deps -w "$dir" "$(dirname "$0")/.."
ls -1 "$dir"
du -sh "$dir"
