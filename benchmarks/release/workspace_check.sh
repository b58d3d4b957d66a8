#!/usr/bin/env bash
# Issue 13, skinny M = 16: the splits' sums through a workspace (RED=1, no chain of turnstiles) against the
# chain (RED=0), over slices per block (KW) and splits (SPLITK), which set how evenly the blocks spread over
# the SMs; then the 8- and 1-row shapes. With DEEP instead: the ring's depth (AH) and the pieces of A (KT) at
# 16 rows only. GPU tests of TESTS first unless NO_TESTS. From the repository root with OUT set:
#   TESTS=tests/test_gpu_splitk.py OUT=out bash benchmarks/release/workspace_check.sh
source benchmarks/release/common.sh
DB="$OUT/workspace.sqlite"
[ -z "$NO_TESTS" ] && gpu_tests
if [ -n "$DEEP" ]; then  # the ring's depth (AH groups of B in flight) and the pieces of A (KT rows) at 16 rows
  step "skinny at 16 rows: AH and KT"
  family_measure skinny "$DB" 16x14336x4096 MR=16 SA=1 SB=1 KW=8 SPLITK=2 RED=0 AH=2,3 KT=32,64
  family_measure skinny "$DB" 16x8192x8192 MR=16 SA=1 SB=1 KW=8 SPLITK=4 RED=1 AH=2,3 KT=32,64
  family_measure skinny "$DB" 16x4096x14336 MR=16 SA=1 SB=1 KW=8 SPLITK=8 RED=1 AH=2,3 KT=32,64
  family_measure skinny "$DB" 16x14336x4096 MR=16 SA=1 SB=1 KW=4 SPLITK=4 RED=0,1 AH=3 KT=32,64
  step "done"
  gzip -c "$DB" > "$OUT/workspace.sqlite.gz" && rm "$DB"
  exit 0
fi
step "skinny RED=0 against RED=1 at 16 rows"
RING=(MR=16 KT=32 SA=1 SB=1 AH=2)
for shape in 16x8192x8192 16x14336x4096 16x4096x14336; do
  family_measure skinny "$DB" $shape "${RING[@]}" KW=8 SPLITK=2,4,8,16 RED=0
  family_measure skinny "$DB" $shape "${RING[@]}" KW=2,4,8 SPLITK=2,4,8,16,32 RED=1
done
step "8 and 1 rows"
for shape in 8x8192x8192 8x14336x4096; do
  family_measure skinny "$DB" $shape MR=8 KT=32 SA=1 SB=1 AH=2,3 KW=4,8 SPLITK=2,4,8 RED=0,1
done
for shape in 1x8192x8192 1x14336x4096; do
  family_measure skinny "$DB" $shape MR=1 KT=64 SA=1 SB=1 AH=2 KW=8,16 SPLITK=2,4,8 RED=0,1
done
step "done"
gzip -c "$DB" > "$OUT/workspace.sqlite.gz" && rm "$DB"
tar czf "$OUT/work.tgz" -C "$WORK" .
