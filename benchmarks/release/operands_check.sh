#!/usr/bin/env bash
# Issue 14's GPU evidence in one call, from the repository root with OUT set:
#   every GPU test; PB=0 against PB=1 (B transposed first by a prologue) for NT and TT at 4096^3 and
#   8192^3 beside NN's default, and NT's at fewer rows (where PB_MIN_ROWS comes from), each shape in
#   one worker process; the best kernel of each layout from its own 40-trial search
#   (benchmarks/layouts.sh); nn.Linear through autotune.load() against torch.matmul.
# Everything lands in $OUT/operands.tgz (databases, logs) and $OUT/log.txt (the numbers).
source benchmarks/release/common.sh

step "GPU tests"
timeout 330 python3 -m pytest -m gpu -p no:cacheprovider --timeout 90 tests >"$WORK/gpu_tests.txt" 2>&1
grep -E "passed|failed|FAILED|error" "$WORK/gpu_tests.txt" | tail -15 | tee -a "$LOG"

step "PB=0 against PB=1, one process per shape"
for S in 4096 8192; do
  timeout 120 $AT measure --M "$S" --family blocked --db "$WORK/pb.sqlite" >>"$WORK/pb.log" 2>&1
  for L in NT TT; do
    timeout 120 $AT measure --M "$S" --family blocked --layout "$L" -p PB=0,1 --db "$WORK/pb.sqlite" >>"$WORK/pb.log" 2>&1
  done
done
for M in 256 512 1024 2048; do
  timeout 120 $AT measure --M "$M" --N 4096 --K 4096 --family blocked --layout NT -p PB=0,1 --db "$WORK/pb.sqlite" \
    >>"$WORK/pb.log" 2>&1
done
python3 - "$WORK/pb.sqlite" <<'PY' | tee -a "$LOG"
import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
for r in con.execute("SELECT M, N, K, coalesce(TA,0), coalesce(TB,0), coalesce(PB,0), coalesce(RT,0), status, time_ms, "
                     "cublas_ms FROM results ORDER BY M, id"):
    print(f"{r[0]}x{r[1]}x{r[2]} TA{r[3]} TB{r[4]} PB{r[5]} RT{r[6]} {r[7]} {r[8] or 0:.4f} ms  cuBLAS NN {r[9] or 0:.4f}")
PY

step "layouts: the best of a 40-trial search each"
OUT="$WORK" timeout 330 bash benchmarks/layouts.sh 4096 40 2>&1 | tee -a "$LOG"

step "nn.Linear(4096, 4096), batch 4096, through autotune.load(), twice"
for run in 1 2; do
  timeout 120 python3 examples/pytorch_linear.py --no-tune --db "$WORK/layouts.sqlite" 2>&1 | tail -4 | tee -a "$LOG"
done
step "done"
tar czf "$OUT/operands.tgz" -C "$WORK" .
