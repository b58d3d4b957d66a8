# session 25 call 6: other warp tiles of the 128x256 tile with EARLY=1 at 2048^3 and 4096^3
source benchmarks/release/common.sh
DB=$WORK/c6.sqlite
step "blocked 2048^3, warp tiles 32x128 and 128x32, EARLY=1"
family_measure blocked $DB 2048x2048x2048 WM=32 WN=128 EARLY=1 BK=8,16 ORDER=0,1,3
family_measure blocked $DB 2048x2048x2048 WM=128 WN=32 EARLY=1 BK=8,16 ORDER=0,1,3
step "tailsplit 4096^3, warp tiles 32x128, EARLY=1"
family_measure tailsplit $DB 4096x4096x4096 WM=32 WN=128 BK=16 ORDER=0,1,3
step "done"
