#!/usr/bin/env bash
# The API's launch path on the GPU: its GPU tests, then the host's and the GPU's time a call
# (benchmarks/api_launch_cost.py) on a suite database. From the repository root with OUT set:
#   zcat benchmarks/data/h200-suite.sqlite.gz > /tmp/s.sqlite
#   OUT=out DB=/tmp/s.sqlite bash benchmarks/release/api_check.sh
source benchmarks/release/common.sh
TESTS="${TESTS:-tests/test_gpu_api.py}" gpu_tests
step "host and GPU time a call"
timeout 300 python3 benchmarks/api_launch_cost.py --db "$DB" \
  --shapes "${SHAPES:-16x8192x8192,16x14336x4096,1x8192x8192,256x256x256,2048x2048x2048}" 2>&1 | tee -a "$LOG"
step "done"
