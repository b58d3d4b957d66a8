# session 26 call 4: the README's main job with today's defaults, the large squares' bests on this board,
# the tail split's AL=2 at an aligned shape with edge tiles (4000^3)
source benchmarks/release/common.sh
DB=$WORK/c4.sqlite
step "the README's main job: autotune search --M 4096 (fresh database)"
( time timeout 150 $AT search --M 4096 --db $WORK/main.sqlite ) 2>&1 | grep -v "^search: " | tail -22 | tee -a $LOG
step "the large squares' bests, each shape in a process of its own"
family_measure blocked $DB 2048x2048x2048 BK=8 ORDER=1 EARLY=1
family_measure tailsplit $DB 4096x4096x4096
family_measure tailsplit $DB 8192x8192x8192
step "4000^3: the tail split AL 0/2; 4097x4095x4093: the tail split's default (AL=2 by the fit)"
family_measure tailsplit $DB 4000x4000x4000 AL=0,2
family_measure tailsplit $DB 4097x4095x4093
gzip -c $DB > $OUT/c4.sqlite.gz
step "done"
