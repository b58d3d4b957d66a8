# session 26 call 5: all GPU tests at the final tree; `autotune measure` of the tail split at 4097x4095x4093 with
# nothing named (now the default at the shape: AL=2)
source benchmarks/release/common.sh
gpu_tests
family_measure tailsplit $WORK/c5.sqlite 4097x4095x4093
cp $WORK/gpu_tests.txt $OUT/
step "done"
