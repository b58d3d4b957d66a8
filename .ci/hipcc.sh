# hipcc (Debian's HIP, for AMD targets) for tests/test_hip.py, the compile check of
# `autotune export --lang hip`, which fails rather than skips under CI. Sourced by .ci/run:
# start_hipcc installs it in the background (about 20 s, while the virtual environment is
# built), wait_hipcc waits for it before the tests. Needs root and apt-get where it is missing.

start_hipcc() {
    HIPCC_PID=""
    command -v hipcc >/dev/null && return 0
    HIPCC_LOG=$(mktemp /tmp/autotune-hipcc.XXXXXX)
    (
        # one apt-get update per run: start_postgres may have done it already
        [ -n "${APT_UPDATED:-}" ] || apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends hipcc
    ) >"$HIPCC_LOG" 2>&1 &
    HIPCC_PID=$!
}

wait_hipcc() {
    [ -n "$HIPCC_PID" ] || return 0
    if ! wait "$HIPCC_PID"; then
        echo "error: apt-get install hipcc failed:" >&2
        cat "$HIPCC_LOG" >&2
        return 1
    fi
    rm -f "$HIPCC_LOG"
}
