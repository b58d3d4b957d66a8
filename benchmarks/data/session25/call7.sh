# session 25 call 7: blocked's default against ORDER=3 EARLY=1 (the best blocked config at 4096^3 in call 4) in each layout
source benchmarks/release/common.sh
DB=$WORK/c7.sqlite
for L in NN NT TN TT; do
  step "blocked 4096^3 $L: the default, and ORDER=3 EARLY=1"
  timeout 150 $AT measure --M 4096 --family blocked --layout $L -p ORDER=0,3 -p EARLY=0,1 --db $DB 2>&1 | grep -v "no SASS\|contract" | tee -a $LOG
done
step "blocked 8192x8192x64: the same four"
timeout 150 $AT measure --M 8192 --N 8192 --K 64 --family blocked -p ORDER=0,3 -p EARLY=0,1 --db $DB 2>&1 | grep -v "no SASS\|contract" | tee -a $LOG
step "done"
