# session 26 call 3: the tail split's AL=2 at 4097x4095x4093 (into call 2's suite database) and at 8191^3,
# then all GPU tests and the tuned suite pass from that database
source benchmarks/release/common.sh
zcat benchmarks/data/session26/call2-suite.sqlite.gz > /tmp/s.sqlite
DB=$WORK/c3.sqlite
step "4097x4095x4093 (into the suite's database): the tail split, AL 0/2 x ORDER 1/3 (EARLY=1)"
family_measure tailsplit /tmp/s.sqlite 4097x4095x4093 AL=0,2 ORDER=1,3
step "8191^3: the tail split AL 0/2 (its default otherwise), blocked AL=2"
family_measure tailsplit $DB 8191x8191x8191 AL=0,2
family_measure blocked $DB 8191x8191x8191 AL=2
gzip -c $DB > $OUT/c3.sqlite.gz
cp $OUT/log.txt $OUT/measure-log.txt
TRIALS=8 TIMEOUT=8 TOTAL=210 START_DB=/tmp/s.sqlite REMEASURE=stale OUT=$OUT bash benchmarks/release/suite_check.sh
gzip -c $OUT/suite.sqlite > $OUT/suite.sqlite.gz && rm $OUT/suite.sqlite
