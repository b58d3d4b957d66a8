#!/usr/bin/env bash
# Issue 13, skinny M: SB=1 (each lane's ring of B rows in shared memory, filled by cp.async) against the
# register ring (SB=0) at the suite's skinny shapes, measured into a copy of START_DB (the earlier
# pass's rows stay beside them), then `autotune suite --no-tune` from that database unless NO_SUITE.
# GPU tests of TESTS first unless NO_TESTS. From the repository root with OUT set:
#   TESTS=tests/test_gpu_splitk.py START_DB=earlier.sqlite OUT=out bash benchmarks/release/ring_check.sh
source benchmarks/release/common.sh
cp "$START_DB" "$OUT/suite.sqlite"
[ -z "$NO_TESTS" ] && gpu_tests
step "skinny SB=1 at the skinny shapes"
family_measure skinny "$OUT/suite.sqlite" 16x8192x8192 MR=16 KT=32,64 SA=1 SB=1 AH=1,2,3 KW=4,8 SPLITK=4
family_measure skinny "$OUT/suite.sqlite" 16x14336x4096 MR=16 KT=32,64 SA=1 SB=1 AH=1,2,3 KW=8 SPLITK=2,4
family_measure skinny "$OUT/suite.sqlite" 16x4096x14336 MR=16 KT=32,64 SA=1 SB=1 AH=1,2,3 KW=8 SPLITK=4,8
for shape in 8x8192x8192 8x14336x4096; do
  family_measure skinny "$OUT/suite.sqlite" $shape MR=8 KT=32,64 SA=1 SB=1 AH=2,3 KW=8 SPLITK=2,4
done
for shape in 1x8192x8192 1x14336x4096; do
  family_measure skinny "$OUT/suite.sqlite" $shape MR=1 KT=64 SA=1 SB=1 AH=2,3 KW=8,16 SPLITK=2
done
for shape in 64x8192x8192 64x14336x4096; do  # four block-rows of 16, each reading B (from L2 where close in time)
  family_measure skinny "$OUT/suite.sqlite" $shape MR=16 KT=32 SA=1 SB=0,1 AH=2 KW=8 SPLITK=1,2
done
if [ -z "$NO_SUITE" ]; then
  step "autotune suite --no-tune"
  timeout 120 $AT suite --shapes benchmarks/shapes.toml --no-tune --db "$OUT/suite.sqlite" --out "$OUT" 2>&1 \
    | tail -40 | tee -a "$LOG"
fi
step "done"
tar czf "$OUT/ring.tgz" -C "$WORK" .
