#!/usr/bin/env bash
# Issue 13, skinny M <= 16: stream-K (WAVE blocks sharing all tiles' rows of K evenly) against the grid of
# tiles x splits, whose blocks spread unevenly over the SMs where the tiles are not a multiple of them
# (16 x 14336 x 4096: 112 tiles). Each shape's bests so far (docs/BENCHMARKS.md, session 17) and the
# WAVE configs in one process, with its cuBLAS. GPU tests of TESTS first unless NO_TESTS. From the
# repository root with OUT set:
#   TESTS="tests/test_gpu_splitk.py -k skinny" OUT=out bash benchmarks/release/wave_check.sh
source benchmarks/release/common.sh
DB="$OUT/wave.sqlite"
[ -z "$NO_TESTS" ] && gpu_tests
RING=(KT=32 SA=1 SB=1 AH=2)
step "skinny at 16 rows: the bests so far, then WAVE"
family_measure skinny "$DB" 16x14336x4096 MR=16 "${RING[@]}" KW=8 SPLITK=2 RED=0
family_measure skinny "$DB" 16x8192x8192 MR=16 "${RING[@]}" KW=8 SPLITK=4 RED=1
family_measure skinny "$DB" 16x4096x14336 MR=16 "${RING[@]}" KW=8 SPLITK=8 RED=1
for shape in 16x14336x4096 16x8192x8192 16x4096x14336; do
  family_measure skinny "$DB" $shape MR=16 "${RING[@]}" KW=4,8 SPLITK=1 WAVE=132,264,396,528
done
step "8 and 1 rows"
family_measure skinny "$DB" 8x8192x8192 MR=8 "${RING[@]}" KW=8 SPLITK=4 RED=1
family_measure skinny "$DB" 8x14336x4096 MR=8 "${RING[@]}" KW=8 SPLITK=2 RED=0
family_measure skinny "$DB" 1x8192x8192 MR=1 KT=64 SA=1 SB=1 AH=2 KW=8 SPLITK=4 RED=1
for shape in 8x8192x8192 8x14336x4096; do
  family_measure skinny "$DB" $shape MR=8 "${RING[@]}" KW=4,8 SPLITK=1 WAVE=264,396,528
done
family_measure skinny "$DB" 1x8192x8192 MR=1 KT=64 SA=1 SB=1 AH=2 KW=8,16 SPLITK=1 WAVE=264,396,528
step "done"
gzip -c "$DB" > "$OUT/wave.sqlite.gz" && rm "$DB"
tar czf "$OUT/work.tgz" -C "$WORK" .
