# session 26 call 1: AL=2 (operands padded to whole tiles) at 4097x4095x4093 and 4000^3, the tile-padded problem as a bound,
# blocked's new default at the large squares, and the AL GPU tests
source benchmarks/release/common.sh
DB=$WORK/c1.sqlite
step "4097x4095x4093 blocked: AL 1/2 x ORDER 0/1/3 x EARLY 0/1"
family_measure blocked $DB 4097x4095x4093 AL=1,2 ORDER=0,1,3 EARLY=0,1
step "the tiles with none at an edge and nothing to copy: 4224x4096x4096 (4097, 4095, 4093 rounded up to 128 x 256 tiles and BK=16)"
family_measure blocked $DB 4224x4096x4096 ORDER=1,3 EARLY=0,1
family_measure tailsplit $DB 4224x4096x4096
step "4000^3: blocked AL 0/2 x ORDER 1/3 (EARLY=1); the tail split's default there and at 4096x4096x4000"
family_measure blocked $DB 4000x4000x4000 AL=0,2 ORDER=1,3
for s in 4000x4000x4000 4096x4096x4000; do family_measure tailsplit $DB $s; done
step "blocked's new default (ORDER=3 EARLY=1) at 2048^3 and 4096^3"
for s in 2048x2048x2048 4096x4096x4096; do family_measure blocked $DB $s; done
TESTS=tests/test_gpu_align.py gpu_tests
gzip -c $DB > $OUT/c1.sqlite.gz
step "done"
