#!/usr/bin/env bash
# Issue 13, the main loop: the FMA orders (blocked's ORDER, default all four) of the configs that the shape
# suite's compute-bound shapes use, each config's orders in one process with its cuBLAS, ROUNDS times.
# Rows go to DB (default $OUT/order.sqlite). From the repository root with OUT set:
#   OUT=out ORDERS=0,1 ROUNDS=2 bash benchmarks/release/order_check.sh
source benchmarks/release/common.sh
O="ORDER=${ORDERS:-0,1,2,3}"
order_round() {
  local db="${DB:-$OUT/order.sqlite}"  # kept: its rows can seed a suite pass (START_DB)
  for n in 2048 4096 8192; do family_measure blocked "$db" ${n}x${n}x${n} "$O"; done
  for n in 4096 8192; do family_measure tailsplit "$db" ${n}x${n}x${n} MAXS=16 "$O"; done
  family_measure blocked "$db" 4000x4000x4000 "$O"
  family_measure blocked "$db" 4097x4095x4093 AL=1 "$O"
  family_measure blocked "$db" 2048x4096x14336 "$O"
  family_measure splitk "$db" 4096x11008x4096 BN=256 SPLITK=2 "$O"
  family_measure splitk "$db" 64x8192x8192 BM=64 BN=128 WM=32 SPLITK=4 "$O"
  family_measure splitk "$db" 128x8192x8192 BN=256 SPLITK=4 RED=1 "$O"
  family_measure splitk "$db" 1024x1024x65536 BN=256 SPLITK=4 RED=1 "$O"
}
for r in $(seq "${ROUNDS:-1}"); do step "round $r"; order_round; done
step "done"
