# session 25 call 3: all GPU tests, then the tuned suite pass of record from call 2's database
zcat benchmarks/data/session25/call2-suite.sqlite.gz > /tmp/s.sqlite
TRIALS=8 TIMEOUT=8 TOTAL=210 START_DB=/tmp/s.sqlite REMEASURE=stale OUT=$OUT bash benchmarks/release/suite_check.sh
gzip -c $OUT/suite.sqlite > $OUT/suite.sqlite.gz && rm $OUT/suite.sqlite
