"""HIP source from the CUDA render (`autotune export --lang hip`): the same template output, passed
through a few substitutions, each with its reason (TRANSLATIONS), so there is no second copy of the
kernels. What HIP cannot express is refused with one line that says what to export instead: inline
PTX (cp.async, mma.sync, ...) and more dynamic shared memory than an AMD workgroup has.

Warp width. Every kernel synchronises its threads with __syncthreads(), and tall's shuffles xor lanes
within aligned groups of at most 32 lanes, so none reads a lane outside a wave of 32 or 64; but the
families that lay threads out by warps (blocked, splitk, tailsplit: warp tiles of 32 lanes; tall:
lane groups meeting by shuffles) were written and tuned for 32-lane warps (their coalescing, bank
conflicts and shuffle widths), so they are built for wave32 targets only (RDNA, gfx10xx/gfx11xx):
their source stops a wave64 compile (CDNA, gfx9xx) with #error. naive, tiled and skinny do not
depend on the warp width and compile for any AMD target. Each family says which it is in its module
(Family.hip); one that says nothing is not exported as HIP. The HIP export is compile-checked with
hipcc, not run: no AMD GPU has measured it.
"""
from __future__ import annotations

import re

from autotune.errors import AutotuneError
from autotune.space import Config, Launch

# The AMD target CI compiles for: RDNA2, wave32, and in Debian's HIP 5.2 device libraries.
CHECK_ARCH = "gfx1030"
# The most LDS (shared memory) one AMD workgroup can address (CDNA and RDNA alike).
LDS_BYTES = 64 * 1024

# (pattern, replacement, why): applied in order to the CUDA render.
TRANSLATIONS: tuple[tuple[str, str, str], ...] = (
    (r"__shfl(_xor|_down|_up|)_sync\(\s*[^,]+,\s*", r"__shfl\1(",
     "HIP 5.2 has no *_sync shuffles; a wave runs its lanes together, so the mask has no HIP meaning"),
    (r"__ldcg\(", "*(",
     "HIP 5.2 has no float __ldcg; split-K reads C only after thread 0's __threadfence() and a barrier, "
     "acquire fences that on AMD invalidate the L1 caches such a load could hit"),
    (r"__launch_bounds__\(([^,()]+),[^()]+\)", r"__launch_bounds__(\1)",
     "HIP's second __launch_bounds__ argument is waves per execution unit, not CUDA's blocks per SM"),
)

# Inline PTX an AMD GPU cannot run, and what to export in its place (the first match names it).
INSTEAD: tuple[tuple[str, str], ...] = (
    ("mma.", "a config of an FP32 family without tensor cores (e.g. --family blocked -p ASYNC=0)"),
    ("wgmma.", "a config of an FP32 family without tensor cores (e.g. --family blocked -p ASYNC=0)"),
    ("cvt.rna.tf32", "a config of an FP32 family without tensor cores (e.g. --family blocked -p ASYNC=0)"),
    ("cp.async", "the same config with -p {no_cp_async}"),
)
ASM = re.compile(r'\basm\s*(?:volatile\s*)?\(\s*"\s*([a-z][\w.]*)')


def ptx_instructions(source: str) -> list[str]:
    """The PTX instructions of the source's inline assembly (cp.async, mma.sync: an opcode's first two
    parts), in order of first use."""
    return list(dict.fromkeys(".".join(op.split(".")[:2]) for op in ASM.findall(source)))


def refusal(config: Config, kernel: str, source: str, launch: Launch) -> str | None:
    """Why `kernel` cannot be exported as HIP, with what to export instead; None if it can."""
    hip = config.family.hip
    if hip is None:  # checked first: a family that has not said what HIP needs is never translated
        return (f"{kernel} cannot be exported as HIP: family {config.family.name} declares no HIP support "
                f"(Family.hip); export it as CUDA")
    ptx = ptx_instructions(source)
    if ptx:
        instead = next((what for prefix, what in INSTEAD if any(op.startswith(prefix) for op in ptx)),
                       "a config that uses no inline PTX").format(no_cp_async=hip.no_cp_async)
        return (f"{kernel} cannot be exported as HIP: it uses inline PTX ({', '.join(ptx)}), which only NVIDIA "
                f"GPUs run; export {instead}")
    if launch.shared_bytes > LDS_BYTES:
        return (f"{kernel} cannot be exported as HIP: it needs {launch.shared_bytes} bytes of dynamic shared "
                f"memory and an AMD workgroup has at most {LDS_BYTES}; export a config with smaller tiles or "
                f"fewer stages")
    return None


def hip_source(config: Config, kernel: str, source: str, launch: Launch) -> str:
    """The HIP translation of `source` (the CUDA render of `config`, whose kernel is `kernel`);
    an AutotuneError saying what to export instead where HIP cannot express it."""
    why = refusal(config, kernel, source, launch)
    if why:
        raise AutotuneError(why)
    for pattern, replacement, _ in TRANSLATIONS:
        source = re.sub(pattern, replacement, source)
    return preamble(config, kernel) + source


def preamble(config: Config, kernel: str) -> str:
    lines = [f"// HIP translation of the CUDA kernel {kernel} (autotune export --lang hip, autotune/codegen/hip.py):",
             "// compile-checked with hipcc for an AMD target, not run on an AMD GPU.",
             "#include <hip/hip_runtime.h>", ""]
    reason = wave32(config)
    if reason:
        lines[2:2] = [f"// Wave32 targets only (RDNA: --offload-arch={CHECK_ARCH}, gfx11xx): {reason}."]
        lines += ["#if defined(__AMDGCN_WAVEFRONT_SIZE) && __AMDGCN_WAVEFRONT_SIZE != 32",
                  f'#error "{kernel} needs 32-lane waves: compile for a wave32 target (RDNA, e.g. '
                  f'--offload-arch={CHECK_ARCH})"',
                  "#endif", ""]
    return "\n".join(lines) + "\n"


def wave32(config: Config) -> str | None:
    """Why the config's kernel needs 32-lane waves (its family's HipSupport), None where any width does."""
    hip = config.family.hip
    if hip is None:
        raise AutotuneError(f"family {config.family.name} declares no HIP support (Family.hip); export it as CUDA")
    return hip.wave32


def wavefront(config: Config) -> str:
    """The manifest's word on the warp width."""
    reason = wave32(config)
    return f"32 only (wave32 targets, RDNA): {reason}" if reason else "any (wave32 or wave64)"
