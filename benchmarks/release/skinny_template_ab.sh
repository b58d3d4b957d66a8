#!/usr/bin/env bash
# A change to templates/skinny.cu.j2 measured against the version before it (OLD), on one GPU, at the
# 16-row shapes' best configs, in alternating rounds (_template_ab.sh). From the repository root with OUT set:
#   OLD=old.cu.j2 TESTS=tests/test_gpu_splitk.py OUT=out bash benchmarks/release/skinny_template_ab.sh
# (FEWER_ROWS=1: the 8-row and 1-row bests as well)
source benchmarks/release/common.sh
source benchmarks/release/_template_ab.sh
ab_round() {
  family_measure skinny "$1" 16x8192x8192 MR=16 KT=32 SPLITK=2 KW=16 AH=2 SA=1 SB=1 RED=1
  family_measure skinny "$1" 16x14336x4096 MR=16 KT=32 SPLITK=1 KW=16 AH=2 SA=1 SB=1
  family_measure skinny "$1" 16x4096x14336 MR=16 KT=32 SPLITK=4 KW=16 AH=2 SA=1 SB=1 RED=1
  if [ -n "$FEWER_ROWS" ]; then  # the suite's bests at 8 rows and 1 row too
    family_measure skinny "$1" 8x14336x4096 MR=8 KT=32 SPLITK=1 KW=16 SA=1 SB=1
    family_measure skinny "$1" 8x8192x8192 MR=8 KT=32 SPLITK=2 KW=8 AH=3 SA=1 SB=1
    family_measure skinny "$1" 1x8192x8192 MR=1 KT=32 SPLITK=4 KW=8 SA=1 SB=1 RED=1
    family_measure skinny "$1" 1x14336x4096 MR=1 KT=64 SPLITK=1 KW=16 SA=1 SB=1
  fi
}
template_ab templates/skinny.cu.j2
