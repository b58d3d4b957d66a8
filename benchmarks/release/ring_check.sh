#!/usr/bin/env bash
# Issue 13, skinny M: SB=1 (each lane's ring of B rows in shared memory, filled by cp.async) against the
# register ring (SB=0) at the suite's skinny shapes, measured into a copy of START_DB (the earlier
# pass's rows stay beside them), then `autotune suite --no-tune` from that database unless NO_SUITE.
# GPU tests of TESTS first unless NO_TESTS; with PROFILE, Nsight Compute on the 16-row ring. From the repository root with OUT set:
#   TESTS=tests/test_gpu_splitk.py START_DB=earlier.sqlite OUT=out bash benchmarks/release/ring_check.sh
source benchmarks/release/common.sh
cp "$START_DB" "$OUT/suite.sqlite"
[ -z "$NO_TESTS" ] && gpu_tests
step "skinny SB=1 at the skinny shapes"
# 16 rows: slices per block (KW) against splits (SPLITK), which set how evenly the blocks spread over the SMs
# and how long the splits' chain of turnstiles is (KW=16: one 512-thread block an SM)
family_measure skinny "$OUT/suite.sqlite" 16x8192x8192 MR=16 KT=32 SA=1 SB=1 AH=2 KW=2,4,8,16 SPLITK=2,4,8,16
family_measure skinny "$OUT/suite.sqlite" 16x14336x4096 MR=16 KT=32 SA=1 SB=1 AH=2 KW=2,4,8,16 SPLITK=1,2,4,8
family_measure skinny "$OUT/suite.sqlite" 16x4096x14336 MR=16 KT=32 SA=1 SB=1 AH=2 KW=2,4,8,16 SPLITK=2,4,8,16
for shape in 16x8192x8192 16x14336x4096 16x4096x14336; do  # two block-rows of 8, the second reading B from L2
  family_measure skinny "$OUT/suite.sqlite" $shape MR=8 KT=32 SA=1 SB=1 AH=2 KW=8 SPLITK=2,4
done
for shape in 8x8192x8192 8x14336x4096; do
  family_measure skinny "$OUT/suite.sqlite" $shape MR=8 KT=32,64 SA=1 SB=1 AH=2,3 KW=8 SPLITK=2,4
done
for shape in 1x8192x8192 1x14336x4096; do
  family_measure skinny "$OUT/suite.sqlite" $shape MR=1 KT=64 SA=1 SB=1 AH=2,3 KW=8,16 SPLITK=2
done
if [ -n "$PROFILE" ]; then  # Nsight Compute's view of the 16-row default with the ring in shared memory
  step "autotune profile, 16x8192x8192"
  timeout 60 $AT profile --M 16 --N 8192 --K 8192 --family skinny -p MR=16 -p SA=1 -p SB=1 -p AH=2 \
    --db "$OUT/suite.sqlite" 2>&1 | tee -a "$LOG"
fi
if [ -z "$NO_SUITE" ]; then
  step "autotune suite --no-tune"
  timeout 120 $AT suite --shapes autotune/api/shapes.toml --no-tune --db "$OUT/suite.sqlite" --out "$OUT" 2>&1 \
    | tail -40 | tee -a "$LOG"
fi
step "done"
tar czf "$OUT/ring.tgz" -C "$WORK" .
