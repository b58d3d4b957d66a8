#!/usr/bin/env bash
# Probe: splitk at small tiles at long-K host-bound corners: can a kernel of ours take <= 11 us there (api.dispatch
# HOST_BOUND_MS)? Its output on an H100: benchmarks/data/splitk-small-tiles-h100.txt. From the repository root, OUT set:
#   OUT=out bash benchmarks/profiling/splitk_small_probe.sh
set -o pipefail
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $OUT/log.txt
source benchmarks/device_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
(cd / && python3 -c "from autotune.api.fastcall import NATIVE; print('installed first step:', 'C' if NATIVE else 'Python')") | tee -a $OUT/log.txt
P=(-p BM=32,64 -p BN=32,64 -p BK=16,32 -p WM=16,32 -p WN=32 -p WNITER=1 -p TM=4 -p TN=4 -p STAGES=2 -p ASYNC=0
   -p pad=4 -p GM=1 -p MINB=1 -p BSWAP=0 -p RT=0 -p ORDER=1 -p EARLY=0 -p MA=0,1 -p MB=0 -p SPLITK=4,8,16,32 -p RED=1,2)
for s in "1024 64 511" "8 4096 1023" "64 128 4096" "128 512 511"; do
  read -r M N K <<<"$s"
  echo "== $M x $N x $K $(date +%T)" | tee -a $OUT/log.txt
  timeout 130 python3 -m autotune.cli search --M $M --N $N --K $K --family splitk --sampler grid "${P[@]}" \
    --trials 200 --timeout 95 --db $OUT/probe.sqlite >$OUT/search-$M-$N-$K.txt 2>&1; echo "rc $?" | tee -a $OUT/log.txt
  python3 - "$OUT/probe.sqlite" $M $N $K <<'PY' | tee -a $OUT/log.txt
import sqlite3, sys
db, M, N, K = sys.argv[1], *map(int, sys.argv[2:])
c = sqlite3.connect(db)
print(c.execute("select status, count(*) from results where M=? and N=? and K=? group by status", (M, N, K)).fetchall())
for r in c.execute("select round(time_ms*1000,2), round(cublas_ms*1000,2), kernel from results where M=? and N=? and K=? and status='ok' order by time_ms limit 6", (M, N, K)):
    print(r)
PY
done
