# session 26 call 2: AL=2 with its prologue by rows (and the fit's AL=2) into a copy of session 25's suite database,
# other misaligned shapes, then all GPU tests and the tuned suite pass from that database
source benchmarks/release/common.sh
zcat benchmarks/data/session25/suite.sqlite.gz > /tmp/s.sqlite
DB=$WORK/c2.sqlite
step "4097x4095x4093 (into the suite's database): AL 1/2 x ORDER 0/3, EARLY=1"
family_measure blocked /tmp/s.sqlite 4097x4095x4093 AL=1,2 ORDER=0,3
step "4000^3 (into the suite's database): AL 0/2, ORDER=3 EARLY=1"
family_measure blocked /tmp/s.sqlite 4000x4000x4000 AL=0,2
step "other misaligned shapes: AL 0/1/2 (blocked's default otherwise)"
for s in 2049x2047x2045 1024x4096x4093 8191x8191x8191; do family_measure blocked $DB $s AL=0,1,2; done
gzip -c $DB > $OUT/c2.sqlite.gz
TRIALS=8 TIMEOUT=8 TOTAL=210 START_DB=/tmp/s.sqlite REMEASURE=stale OUT=$OUT bash benchmarks/release/suite_check.sh
gzip -c $OUT/suite.sqlite > $OUT/suite.sqlite.gz && rm $OUT/suite.sqlite
