#!/usr/bin/env bash
# Issue 13, skinny M <= 16: the suite's best configs at the 1-, 8- and 16-row shapes measured again, REPEATS
# times (default 2), each time on a fresh database so that nothing is skipped as measured before: how far
# a suite row's time moves from one run (and one GPU) to the next. From the repository root with OUT set:
#   OUT=out bash benchmarks/release/skinny_repeat.sh
source benchmarks/release/common.sh
for rep in $(seq "${REPEATS:-2}"); do
  db="$WORK/repeat$rep.sqlite"
  step "repeat $rep"
  family_measure skinny "$db" 16x8192x8192 MR=16 KT=32 SPLITK=4 KW=8 AH=2 SA=1 SB=1
  family_measure skinny "$db" 16x14336x4096 MR=16 KT=32 SPLITK=2 KW=8 AH=2 SA=1 SB=1
  family_measure skinny "$db" 16x4096x14336 MR=16 KT=32 SPLITK=8 KW=8 AH=2 SA=1 SB=1
  family_measure skinny "$db" 8x8192x8192 MR=8 KT=32 SPLITK=2 KW=8 AH=3 SA=1 SB=1
  family_measure skinny "$db" 8x14336x4096 MR=8 KT=32 SPLITK=2 KW=8 AH=2 SA=1 SB=1
  family_measure skinny "$db" 1x8192x8192 MR=1 KT=64 SPLITK=2 KW=16 AH=2 SA=1 SB=1
  family_measure skinny "$db" 1x14336x4096 MR=1 KT=64 SPLITK=2 KW=8 AH=2 SA=1 SB=1
done
step "done"
