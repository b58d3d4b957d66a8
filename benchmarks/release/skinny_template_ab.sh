#!/usr/bin/env bash
# A change to templates/skinny.cu.j2 measured against the version before it (OLD), on one GPU, at the
# 16-row shapes' best configs, in alternating rounds (_template_ab.sh). From the repository root with OUT set:
#   OLD=old.cu.j2 TESTS=tests/test_gpu_splitk.py OUT=out bash benchmarks/release/skinny_template_ab.sh
source benchmarks/release/common.sh
source benchmarks/release/_template_ab.sh
ab_round() {
  family_measure skinny "$1" 16x8192x8192 MR=16 KT=32 SPLITK=4 KW=8 AH=2 SA=1 SB=1
  family_measure skinny "$1" 16x14336x4096 MR=16 KT=32 SPLITK=2 KW=8 AH=2 SA=1 SB=1
  family_measure skinny "$1" 16x4096x14336 MR=16 KT=32 SPLITK=4,8 KW=8 AH=2 SA=1 SB=1
}
template_ab templates/skinny.cu.j2
