# session 26 call 6: does C's row length cost AL=2 at 4097x4095x4093? N=4095 (scalar stores of C) against N=4096 (float4 stores)
source benchmarks/release/common.sh
DB=$WORK/c6.sqlite
for s in 4097x4095x4093 4097x4096x4093; do family_measure tailsplit $DB $s; family_measure blocked $DB $s ORDER=0; done
gzip -c $DB > $OUT/c6.sqlite.gz
step "done"
