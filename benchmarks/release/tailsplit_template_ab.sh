#!/usr/bin/env bash
# Issue 13, large squares: a change to the tail split's part of templates/blocked.cu.j2 (OLD: the other
# version) measured against the checkout's, the tail split beside blocked with the same tile at 4096^3 and
# 8192^3, in alternating rounds (_template_ab.sh; blocked's own source is the same in both). From the
# repository root with OUT set:
#   OLD=other.cu.j2 NO_TESTS=1 OUT=out bash benchmarks/release/tailsplit_template_ab.sh
source benchmarks/release/common.sh
source benchmarks/release/_template_ab.sh
ab_round() {
  for n in 4096 8192; do
    family_measure blocked "$1" ${n}x${n}x${n}
    family_measure tailsplit "$1" ${n}x${n}x${n} MAXS=16
  done
}
template_ab templates/blocked.cu.j2
