"""Predicted ceilings of every valid naive and tiled config, for the model-guided sampler.

The model (autotune/model.py) needs SASS counts, i.e. NVRTC and nvdisasm but no GPU. This
compiles the whole space once (a few minutes on two cores) and writes kernel -> predicted
TFLOP/s as JSON, so the benchmark and CI read the ceilings without compiling anything.

    python benchmarks/model_ceilings.py -o benchmarks/data/model-ceilings-sm90-h200.json
"""
from __future__ import annotations

import argparse
import json
from concurrent.futures import ProcessPoolExecutor

from autotune.explain.counts import explain
from autotune.explain.model import PRESETS
from autotune.families import NAIVE, TILED
from autotune.space import valid_configs


def _predict(index: tuple[str, int]) -> tuple[str, float | None]:
    family = {"naive": NAIVE, "tiled": TILED}[index[0]]
    config = valid_configs(family)[index[1]]
    try:
        return config.name, explain(config, "sm_90", PRESETS["h200"])["predicted_tflops"]
    except Exception:  # a config that does not compile has no ceiling
        return config.name, None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("-j", "--jobs", type=int, default=2)
    args = ap.parse_args()
    work = [(f.name, i) for f in (NAIVE, TILED) for i in range(len(valid_configs(f)))]
    with ProcessPoolExecutor(args.jobs) as pool:
        ceilings = dict(pool.map(_predict, work, chunksize=8))
    meta = {"arch": "sm_90", "device": "h200", "what": "kernel -> predicted TFLOP/s (autotune.model)"}
    with open(args.output, "w") as fh:
        json.dump({"meta": meta, "ceilings": ceilings}, fh, indent=0, sort_keys=True)


if __name__ == "__main__":
    main()
