# session 25 call 5: two 128x128 blocks per SM against one 128x256, with and without EARLY
source benchmarks/release/common.sh
DB=$WORK/c5.sqlite
step "blocked 2048^3, 128x128 tiles"
family_measure blocked $DB 2048x2048x2048 BN=128 MINB=1,2 EARLY=0,1 BK=8,16 ORDER=0,1
step "tailsplit 4096^3, 128x128 tiles, two blocks per SM"
family_measure tailsplit $DB 4096x4096x4096 BN=128 MINB=2 WAVE=264 EARLY=0,1 BK=16 ORDER=0,1
step "done"
