#!/usr/bin/env bash
# A change to templates/skinny.cu.j2 measured against the version before it, on one GPU, at the 16-row
# shapes' best configs: rounds alternate between the checkout's template ("new") and the file OLD ("old"),
# each round on a fresh database (nothing skipped), each shape in its own process with its own cuBLAS. The
# checkout's template is restored at the end. GPU tests of TESTS first unless NO_TESTS. From the
# repository root with OUT set:
#   OLD=old.cu.j2 TESTS=tests/test_gpu_splitk.py OUT=out bash benchmarks/release/skinny_template_ab.sh
source benchmarks/release/common.sh
[ -z "$NO_TESTS" ] && gpu_tests
cp templates/skinny.cu.j2 "$WORK/new.cu.j2"
cp "$OLD" "$WORK/old.cu.j2"
trap 'cp "$WORK/new.cu.j2" templates/skinny.cu.j2' EXIT
for round in ${ROUNDS:-new old new old}; do
  cp "$WORK/$round.cu.j2" templates/skinny.cu.j2
  step "round: the $round template"
  db="$WORK/$round-$RANDOM.sqlite"
  family_measure skinny "$db" 16x8192x8192 MR=16 KT=32 SPLITK=4 KW=8 AH=2 SA=1 SB=1
  family_measure skinny "$db" 16x14336x4096 MR=16 KT=32 SPLITK=2 KW=8 AH=2 SA=1 SB=1
  family_measure skinny "$db" 16x4096x14336 MR=16 KT=32 SPLITK=4,8 KW=8 AH=2 SA=1 SB=1
done
step "done"
