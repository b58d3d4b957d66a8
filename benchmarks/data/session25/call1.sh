# session 25 call 1: EARLY (barrier one k-step early, fragments across it) against EARLY=0 at the large squares
source benchmarks/release/common.sh
DB=$WORK/early.sqlite
export MEASURE_TIMEOUT=200
step "blocked 2048^3 register path"
family_measure blocked $DB 2048x2048x2048 EARLY=0,1 BK=8,16 ORDER=0,1,3
step "tailsplit 4096^3 register path"
family_measure tailsplit $DB 4096x4096x4096 EARLY=0,1 BK=8,16 ORDER=0,1
step "blocked 4096^3 cp.async"
family_measure blocked $DB 4096x4096x4096 EARLY=0,1 ASYNC=1 STAGES=2,3,4 BK=8,16 ORDER=1
step "blocked 2048^3 cp.async"
family_measure blocked $DB 2048x2048x2048 EARLY=0,1 ASYNC=1 STAGES=3,4 BK=8,16 ORDER=0,1
step "done"
cp $DB $OUT/
