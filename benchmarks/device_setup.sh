# Source this on an air-gapped GPU node from the repository root: installs the lean
# wheelhouse (scripts/build-wheelhouse.sh --lean) and autotune itself into /tmp/site.
rm -rf /tmp/site
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site \
  $(ls wheelhouse/*.whl | grep -v '/sgemm_autotune-') || return 1
python3 -m pip install -q --no-deps --no-build-isolation --no-cache-dir --target /tmp/site . || return 1
export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1 AUTOTUNE_REQUIRE_GPU=1
# api._aten for this torch, in the user's cache, as a process that called load() before would have left it
(cd / && python3 -m autotune.api.aten_build)
command -v autotune >/dev/null || autotune() { python3 -m autotune.cli "$@"; }
