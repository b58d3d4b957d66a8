# session 25 call 4: the large squares' bests again (two rounds, each in its own process with its cuBLAS),
# blocked's EARLY at 4096^3, and the README's main job with today's defaults
source benchmarks/release/common.sh
DB=$WORK/c4.sqlite
bests() {
  family_measure blocked $DB 2048x2048x2048 BK=8 ORDER=1 EARLY=1
  family_measure tailsplit $DB 4096x4096x4096
  family_measure tailsplit $DB 8192x8192x8192
}
step "the bests, round 1"; bests
step "blocked 4096^3, EARLY 0 and 1"
family_measure blocked $DB 4096x4096x4096 EARLY=0,1 BK=8,16 ORDER=0,1,3
step "the README's main job: autotune search --M 4096 (fresh database)"
( time timeout 150 $AT search --M 4096 --db $WORK/main.sqlite ) 2>&1 | grep -v "^search: " | tail -22 | tee -a $LOG
step "the bests, round 2"; bests
step "done"
