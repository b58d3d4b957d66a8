# session 25 call 2: EARLY=1 around the large squares' tiles, and at every suite shape whose best is blocked,
# splitk or tailsplit (that best's config with EARLY 0 and 1), into a copy of session 24's suite database
source benchmarks/release/common.sh
DB=$WORK/suite.sqlite
zcat benchmarks/data/session24/suite.sqlite.gz > $DB
export MEASURE_TIMEOUT=240
step "blocked 2048^3 EARLY=1 grid"
family_measure blocked $DB 2048x2048x2048 EARLY=1 BK=8,16 ORDER=0,1,3 GM=1,8 pad=0,4
family_measure blocked $DB 2048x2048x2048 EARLY=1 BK=8 ORDER=1 BSWAP=0
step "tailsplit 4096^3 EARLY=1 grid"
family_measure tailsplit $DB 4096x4096x4096 EARLY=1 BK=16 ORDER=0,1,3 GM=1,8 pad=0,4
family_measure tailsplit $DB 4096x4096x4096 EARLY=1 BK=8 ORDER=1 GM=1,8 pad=0,4
step "8192^3"
family_measure tailsplit $DB 8192x8192x8192 EARLY=0,1 ORDER=1
step "the suite's other bests of these families, EARLY 0 and 1"
family_measure tailsplit $DB 4000x4000x4000 EARLY=0,1 ORDER=1
family_measure blocked $DB 4097x4095x4093 EARLY=0,1 AL=1 ORDER=1
family_measure splitk $DB 64x8192x8192 EARLY=0,1 BM=64 BN=128 WM=32 WN=64 ORDER=3 SPLITK=4
family_measure splitk $DB 128x8192x8192 EARLY=0,1 BN=256 ORDER=1 SPLITK=4 RED=1
family_measure splitk $DB 64x14336x4096 EARLY=0,1 BM=64 BN=128 WM=32 WN=64 ORDER=1 SPLITK=16
family_measure tailsplit $DB 128x14336x4096 EARLY=0,1 ORDER=1
family_measure splitk $DB 8192x128x8192 EARLY=0,1 BN=128 ORDER=1 SPLITK=4 RED=1
family_measure splitk $DB 1024x1024x65536 EARLY=0,1 BN=256 ORDER=1 SPLITK=4 RED=1
family_measure splitk $DB 256x256x262144 EARLY=0,1 BN=256 ORDER=1 SPLITK=64 RED=2
family_measure splitk $DB 1024x1024x1024 EARLY=0,1 BN=256 ORDER=0,1 SPLITK=4 RED=1
family_measure blocked $DB 2048x4096x14336 EARLY=0,1 ORDER=0,1,3
family_measure tailsplit $DB 4096x11008x4096 EARLY=0,1 ORDER=1
family_measure blocked $DB 8192x8192x64 EARLY=0,1 ORDER=0,1
family_measure blocked $DB 8192x8192x128 EARLY=0,1 ORDER=0,1
step "done"
gzip -c $DB > $OUT/suite.sqlite.gz
