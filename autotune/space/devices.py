"""Named devices: the Limits of GPUs a space is sized for where no GPU answers (the emulator, a replay,
compiling ahead for another machine). On a GPU the backend reads the same numbers from the device
(backends.cuda.device), and those win. The numbers are NVIDIA's data sheets and the CUDA programming
guide's table of compute capabilities (threads, blocks, shared memory and registers per SM)."""
from __future__ import annotations

import re

from autotune.errors import SpaceError
from autotune.space.config import Family, Limits, arch_refusal, on_device

KIB = 1024

# Per architecture: (threads, blocks an SM holds at once, its shared memory in KiB, the most one block
# may opt in to in KiB). Registers are 64K per SM on all of them (Limits' default).
ARCHS: dict[str, tuple[int, int, int, int]] = {
    "sm_80": (2048, 32, 164, 163),
    "sm_86": (1536, 16, 100, 99),
    "sm_89": (1536, 24, 100, 99),
    "sm_90": (2048, 32, 228, 227),
    "sm_100": (2048, 32, 228, 227),
    "sm_120": (1536, 32, 100, 99),
}


def _device(sms: int, arch: str) -> Limits:
    threads, blocks, shared_kib, optin_kib = ARCHS[arch]
    return Limits(sms=sms, arch=arch, max_threads_per_sm=threads, max_blocks_per_sm=blocks,
                  shared_per_sm=shared_kib * KIB, max_shared_optin=optin_kib * KIB)


PRESETS: dict[str, Limits] = {
    "h200": _device(132, "sm_90"),
    "h100-sxm": _device(132, "sm_90"),
    "h100-pcie": _device(114, "sm_90"),
    "a100": _device(108, "sm_80"),
    "a10": _device(72, "sm_86"),
    "rtx3090": _device(82, "sm_86"),
    "rtx4090": _device(128, "sm_89"),
    "l40s": _device(142, "sm_89"),
    "b200": _device(148, "sm_100"),
    "rtx5090": _device(170, "sm_120"),
}

# One preset per architecture, for what is checked per architecture (tests/test_compile_matrix.py).
ARCH_PRESETS: dict[str, str] = {"sm_80": "a100", "sm_86": "a10", "sm_89": "rtx4090", "sm_90": "h200",
                                "sm_100": "b200", "sm_120": "rtx5090"}


def gpu_tag(name: str | None) -> str:
    """The short name of a GPU model in file names (benchmarks/data/*-h200.json, the shipped tuned/h100.sqlite):
    its first model code, a word of letters then digits (NVIDIA H100 80GB HBM3: h100; Tesla V100-SXM2-16GB: v100),
    else its whole name as a slug (GeForce RTX 4090: geforce-rtx-4090); "gpu" for none. One rule, so that a run's
    outputs and the database it reads name a model alike."""
    words = re.sub(r"[^a-z0-9]+", " ", (name or "").lower()).split()
    words = [w for w in words if w != "nvidia"]
    code = next((w for w in words if re.fullmatch(r"[a-z]+[0-9]+[a-z]*", w)), None)
    return code or "-".join(words) or "gpu"


def preset(name: str) -> Limits:
    """The named device's Limits; an unknown name is refused with the known ones."""
    if name not in PRESETS:
        raise SpaceError(f"unknown device preset {name!r}; choose from {', '.join(PRESETS)}")
    return PRESETS[name]


def device_parameters(family: Family) -> set[str]:
    """The parameters on_device cuts: their values follow from a device that is known only once a search's
    workers have started."""
    return set(family.device_values(Limits())) if family.device_values else set()


def for_device(families: list[Family], limits: Limits) -> tuple[list[Family], list[str]]:
    """The families a search on the device walks (each cut to its device values, space.config.on_device)
    and the one-line refusals of those whose architecture the device lacks (Family.needs); refused
    outright where none is left."""
    refused = [why for why in (arch_refusal(f, limits) for f in families) if why]
    kept = [on_device(f, limits) for f in families if not arch_refusal(f, limits)]
    if not kept and refused:
        raise SpaceError(refused[0])
    return kept, refused
