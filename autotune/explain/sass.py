"""Offline SASS analysis: disassemble a cubin and count what the roofline model needs.

No GPU is involved: NVRTC writes the cubin, nvdisasm (the `sass` extra) turns it into
text, and the cubin's own ELF sections give the registers and shared memory.

What is counted. `count()` returns, per kernel, the static instruction counts of its *hot
loop*: the address range of a backward branch (label .. BRA back to it) that holds the
most FFMA instructions (or tensor-core MMAs: HMMA, HGMMA, IMMA, IGMMA). For the families
here that is the main K loop; in the tiled kernel it includes the cooperative tile-load
loop nested in it (LDG/STS once each, statically). Static counts of an unrolled body are
what sets the ratios per FFMA. A kernel with no loop containing FFMA or an MMA (or
scope="kernel") is counted whole.

Where resources come from. Registers and the local-memory frame are read from the
`.nv.info` section's EIATTR_REGCOUNT / EIATTR_FRAME_SIZE records; shared memory from the
size of the `.nv.shared.<kernel>` section, which is what `cuobjdump -res-usage` prints as
SHARED. On sm_80+ that section starts with the 1 KiB the system reserves per block (the
SASS addresses the first array at 0x400), so `static_shared` subtracts it. Spills show
as a non-zero frame and LDL/STL instructions; ptxas's own spill line is only in a
verbose compile log, which compile.py does not request.
"""
from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
import tempfile
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterator

from autotune.errors import AutotuneError

if TYPE_CHECKING:
    from autotune.space import Config

INSTALL_HINT = "nvdisasm not found: pip install 'sgemm-autotune[sass]' (the nvidia-cuda-nvdisasm wheel)"

# One instruction line: /*0110*/  [@!P0 ]OPCODE.MODS operands ;
_INSTR = re.compile(r"^\s*/\*([0-9a-f]+)\*/\s+(?:(@!?U?P[T0-9]+)\s+)?([A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*)(.*);")
# guarded by "not true": never executed (ptxas pads schedules with `@!PT LDS RZ, [RZ]`), so not counted
_NEVER = ("@!PT", "@!UPT")
_LABEL = re.compile(r"^(\.L_x_\d+):")
_BRANCH_TARGET = re.compile(r"`\((\.L_x_\d+)\)")
_SECTION = re.compile(r"^\s*\.section\s+\.text\.([A-Za-z_$][\w$]*),")
# warpgroup MMAs: HGMMA.64x128x8.F32.TF32 (M 64, N 128, K 8), IGMMA.64x64x32.S8.S8 (wgmma .s8, K 32)
_GMMA_SHAPE = re.compile(r"^[HI]GMMA\.64x(\d+)x\d+")
_MMAS = ("HMMA", "HGMMA", "IMMA", "IGMMA")  # tensor-core instructions: what makes a loop hot without FFMA
_WIDTHS = {"8": 8, "U8": 8, "S8": 8, "16": 16, "U16": 16, "S16": 16, "64": 64, "128": 128}


# --------------------------------------------------------------------------- nvdisasm

def find_nvdisasm() -> str:
    """Path to nvdisasm: cuda.pathfinder (wheels, conda, CUDA_HOME), the wheel's folder, PATH."""
    try:
        from cuda.pathfinder import find_nvidia_binary_utility

        found = find_nvidia_binary_utility("nvdisasm")
        if found:
            return found
    except (ImportError, AttributeError):  # older pathfinder without binary lookup
        pass
    for path in _wheel_candidates():
        if os.access(path, os.X_OK):
            return path
    found = shutil.which("nvdisasm")
    if found:
        return found
    raise AutotuneError(INSTALL_HINT)


def _wheel_candidates() -> Iterator[str]:
    """The nvidia-cuda-nvdisasm wheel puts the binary in nvidia/cu13/bin (cu12 before)."""
    try:
        import nvidia  # namespace package shared by NVIDIA's wheels
    except ImportError:
        return
    for root in getattr(nvidia, "__path__", []):
        for sub in ("cu13", "cu12", "cuda_nvdisasm"):
            yield os.path.join(root, sub, "bin", "nvdisasm")


def disassemble(cubin: bytes) -> str:
    """The SASS text of a cubin (every section; count() picks the code out)."""
    tool = find_nvdisasm()
    with tempfile.TemporaryDirectory(prefix="autotune-sass-") as tmp:
        path = os.path.join(tmp, "kernel.cubin")
        with open(path, "wb") as f:
            f.write(cubin)
        done = subprocess.run([tool, path], capture_output=True, text=True)
    if done.returncode != 0:
        raise AutotuneError(f"nvdisasm failed ({done.returncode}): {done.stderr.strip()[:300]}")
    return done.stdout


# --------------------------------------------------------------------------- counting

@dataclass(frozen=True)
class Instr:
    offset: int
    opcode: str  # with modifiers, e.g. LDS.U.128
    operands: str


@dataclass(frozen=True)
class SassCounts:
    """Static counts. Width maps are keyed by bits per thread (32, 64, 128; 8/16 too)."""

    scope: str  # "loop" (the hot loop's body) or "kernel" (everything)
    ffma: int = 0
    lds: dict[int, int] = field(default_factory=dict)  # shared loads
    ldg: dict[int, int] = field(default_factory=dict)  # global loads, .CONSTANT included
    sts: dict[int, int] = field(default_factory=dict)
    stg: dict[int, int] = field(default_factory=dict)
    ldl: int = 0  # local-memory loads: spill reloads (or local arrays)
    stl: int = 0
    bar: int = 0  # BAR.SYNC and other BAR forms
    instructions: int = 0
    hmma: int = 0  # tensor-core MMAs (HMMA.1688.F32.TF32 for the tf32x3 family)
    hgmma: int = 0  # warpgroup MMAs (HGMMA.64xNx8.F32.TF32 for tf32x3wg): one per warpgroup, operands from shared memory
    hgmma_n: int = 0  # the N of those (64xNx8): every HGMMA of a kernel has the same
    ldgsts: int = 0  # cp.async copies, global to shared
    lop3: int = 0  # logic ops: with HMMA, mostly the TF32 conversions' masks (cvt.rna is IADD + LOP3)
    imma: int = 0  # integer tensor-core MMAs (IMMA.16832.S8.S8, mma.sync m16n8k32 s8, for the ozaki family)
    igmma: int = 0  # integer warpgroup MMAs (IGMMA.64xNx32.S8.S8, wgmma .s8; no family issues them yet)
    igmma_n: int = 0  # the N of those, as hgmma_n

    @property
    def shared_loads(self) -> int:
        return sum(self.lds.values())

    @property
    def global_loads(self) -> int:
        return sum(self.ldg.values())

    @property
    def lds_per_ffma(self) -> float:
        return self.shared_loads / self.ffma if self.ffma else float("inf")

    def lds_named(self) -> dict[str, int]:
        """LDS counts under their SASS spelling: LDS, LDS.64, LDS.128."""
        return {("LDS" if b <= 32 else f"LDS.{b}"): n for b, n in sorted(self.lds.items())}


def split_kernels(sass_text: str) -> dict[str, list[Instr | str]]:
    """Each kernel's code: instructions and label names, in order, from its .text section."""
    kernels: dict[str, list[Instr | str]] = {}
    current: list[Instr | str] | None = None
    for line in sass_text.splitlines():
        section = _SECTION.match(line)
        if section:
            current = kernels.setdefault(section.group(1), [])
            continue
        if line.startswith("//----"):  # a new section header: code ends here
            current = None
            continue
        if current is None:
            continue
        label = _LABEL.match(line)
        if label:
            current.append(label.group(1))
            continue
        instr = _INSTR.match(line)
        if instr and instr.group(2) not in _NEVER:
            current.append(Instr(int(instr.group(1), 16), instr.group(3), instr.group(4)))
    return kernels


def loops(code: list[Instr | str]) -> list[list[Instr]]:
    """Each backward branch's body: the instructions from its target label to the branch."""
    where: dict[str, int] = {}
    found = []
    for i, item in enumerate(code):
        if isinstance(item, str):
            where[item] = i
            continue
        if item.opcode.startswith("BRA"):
            target = _BRANCH_TARGET.search(item.operands)
            if target and target.group(1) in where:  # a label already seen: backward
                body = code[where[target.group(1)]: i + 1]
                found.append([x for x in body if isinstance(x, Instr)])
    return found


def hot_loop(code: list[Instr | str]) -> list[Instr] | None:
    """The loop with the most FFMA, or tensor-core MMAs in a tensor-core kernel (the smaller one on a tie);
    None without either in loops."""
    scored = [(_ffma(body) + sum(1 for x in body if x.opcode.split(".")[0] in _MMAS), -len(body), body)
              for body in loops(code)]
    scored = [s for s in scored if s[0] > 0]
    return max(scored, key=lambda s: s[:2])[2] if scored else None


def _ffma(body: list[Instr]) -> int:
    return sum(1 for x in body if x.opcode.split(".")[0] == "FFMA")


def width(opcode: str) -> int:
    """Bits per thread moved by a load/store: LDS.U.128 -> 128, LDG.E.CONSTANT -> 32."""
    bits = [_WIDTHS[m] for m in opcode.split(".")[1:] if m in _WIDTHS]
    return bits[-1] if bits else 32


def tally(body: list[Instr], scope: str) -> SassCounts:
    """Count one list of instructions by opcode family and width."""
    maps: dict[str, dict[int, int]] = {"LDS": {}, "LDG": {}, "STS": {}, "STG": {}}
    plain = {"FFMA": 0, "LDL": 0, "STL": 0, "BAR": 0, "LDGSTS": 0, "LOP3": 0, **dict.fromkeys(_MMAS, 0)}
    gmma_n = {"HGMMA": 0, "IGMMA": 0}
    for x in body:
        base = x.opcode.split(".")[0]
        if base in maps:
            w = width(x.opcode)
            maps[base][w] = maps[base].get(w, 0) + 1
        elif base in plain:
            plain[base] += 1
            shape = _GMMA_SHAPE.match(x.opcode + x.operands) if base in gmma_n else None  # "64" + "x128x8..."
            if shape:
                gmma_n[base] = int(shape.group(1))
    return SassCounts(
        scope=scope, ffma=plain["FFMA"], lds=maps["LDS"], ldg=maps["LDG"], sts=maps["STS"],
        stg=maps["STG"], ldl=plain["LDL"], stl=plain["STL"], bar=plain["BAR"], instructions=len(body),
        hmma=plain["HMMA"], hgmma=plain["HGMMA"], hgmma_n=gmma_n["HGMMA"], ldgsts=plain["LDGSTS"], lop3=plain["LOP3"],
        imma=plain["IMMA"], igmma=plain["IGMMA"], igmma_n=gmma_n["IGMMA"],
    )


def count(sass_text: str, scope: str = "loop") -> dict[str, SassCounts]:
    """Per kernel: counts of the hot loop (scope="loop"), or of the whole kernel ("kernel")."""
    if scope not in ("loop", "kernel"):
        raise ValueError(f"scope must be 'loop' or 'kernel', not {scope!r}")
    out = {}
    for name, code in split_kernels(sass_text).items():
        everything = [x for x in code if isinstance(x, Instr)]
        body = hot_loop(code) if scope == "loop" else None
        out[name] = tally(body, "loop") if body is not None else tally(everything, "kernel")
    return out


# --------------------------------------------------------------------------- resources

EIATTR_FRAME_SIZE = 0x11  # per-thread stack frame in local memory (spills, local arrays)
EIATTR_REGCOUNT = 0x2F
_EIFMT_SVAL = 0x04  # record with a 16-bit size and a payload of (symbol index, value)
RESERVED_SHARED = 1024  # sm_80+ reserve 1 KiB per block at the start of the shared window


@dataclass(frozen=True)
class Resources:
    registers: int  # per thread, as allocated by ptxas
    frame_bytes: int  # local memory per thread: non-zero means spills or local arrays
    shared_section: int  # .nv.shared.<kernel> size; cuobjdump -res-usage's SHARED
    static_shared: int  # the kernel's own __shared__ arrays (section less the reservation)
    ldl: int = 0  # local loads/stores in the whole kernel (filled from SASS when known)
    stl: int = 0

    @property
    def spills(self) -> bool:
        return self.frame_bytes > 0 or self.ldl > 0 or self.stl > 0


def _sections(elf: bytes) -> dict[str, bytes]:
    """Name -> contents of a 64-bit little-endian ELF's sections (NOBITS: zero bytes)."""
    if elf[:4] != b"\x7fELF" or elf[4] != 2:
        raise AutotuneError("not a 64-bit ELF cubin")
    shoff = struct.unpack_from("<Q", elf, 0x28)[0]
    entsize, num, strndx = struct.unpack_from("<HHH", elf, 0x3A)
    headers = [struct.unpack_from("<IIQQQQ", elf, shoff + i * entsize) for i in range(num)]
    names_at = headers[strndx][4]

    def name(offset: int) -> str:
        start = names_at + offset
        return elf[start: elf.index(b"\0", start)].decode()

    nobits = 8  # .nv.shared.* occupy no file bytes: stand in zeros of the section's size
    return {name(h[0]): (bytes(h[5]) if h[1] == nobits else elf[h[4]: h[4] + h[5]]) for h in headers}


def _symbols(elf_sections: dict[str, bytes]) -> list[str]:
    """Symbol names by index, so nv.info records can be tied to their kernel."""
    table, names = elf_sections.get(".symtab", b""), elf_sections.get(".strtab", b"")
    out = []
    for i in range(len(table) // 24):
        offset = struct.unpack_from("<I", table, i * 24)[0]
        out.append(names[offset: names.index(b"\0", offset)].decode())
    return out


def _nv_info(data: bytes) -> Iterator[tuple[int, bytes]]:
    """(attribute, payload) records of an .nv.info section."""
    at = 0
    while at + 4 <= len(data):
        fmt, attr = data[at], data[at + 1]
        if fmt == _EIFMT_SVAL:
            size = struct.unpack_from("<H", data, at + 2)[0]
            yield attr, data[at + 4: at + 4 + size]
            at += 4 + size
        else:  # EIFMT_NVAL (no payload), EIFMT_BVAL / HVAL (value in the header)
            yield attr, data[at + 2: at + 4]
            at += 4


def _per_kernel(sections: dict[str, bytes], attr: int) -> dict[str, int]:
    symbols = _symbols(sections)
    out = {}
    for a, payload in _nv_info(sections.get(".nv.info", b"")):
        if a == attr and len(payload) >= 8:
            index, value = struct.unpack_from("<II", payload)
            out[symbols[index]] = value
    return out


def resources(cubin: bytes, kernel: str | None = None, sass_text: str | None = None) -> Resources:
    """Registers, frame and shared memory of one kernel (the only one if not named)."""
    sections = _sections(cubin)
    regs = _per_kernel(sections, EIATTR_REGCOUNT)
    if kernel is None:
        if len(regs) != 1:
            raise AutotuneError(f"the cubin holds {len(regs)} kernels; name one of {sorted(regs)}")
        kernel = next(iter(regs))
    if kernel not in regs:
        raise AutotuneError(f"kernel {kernel!r} not in the cubin; it holds {sorted(regs)}")
    section = len(sections.get(f".nv.shared.{kernel}", b""))
    reserved = RESERVED_SHARED if ".nv.shared.reserved.0" in sections and section else 0
    whole = count(sass_text, scope="kernel").get(kernel) if sass_text else None
    return Resources(
        registers=regs[kernel],
        frame_bytes=_per_kernel(sections, EIATTR_FRAME_SIZE).get(kernel, 0),
        shared_section=section,
        static_shared=max(section - reserved, 0),
        ldl=whole.ldl if whole else 0,
        stl=whole.stl if whole else 0,
    )


# --------------------------------------------------------------------------- the report

@dataclass(frozen=True)
class SassReport:
    kernel: str
    arch: str
    loop: SassCounts  # the hot loop (or the whole kernel when it has no loop with FFMA)
    whole: SassCounts  # the whole kernel
    resources: Resources
    sass: str  # the full nvdisasm text, for a reader who wants to look


def analyze(config: Config, arch: str = "sm_90") -> SassReport:
    """Render, compile with NVRTC, disassemble and count one config. No GPU needed."""
    from autotune.codegen.render import render

    return analyze_source(config, render(config), arch)


def analyze_source(config: Config, source: str, arch: str = "sm_90") -> SassReport:
    """analyze() for a given source, e.g. the one stored with a measurement."""
    from autotune.codegen.nvrtc import compile_source

    compiled = compile_source(source, config.name, arch)
    if not compiled.ok:
        first = compiled.log.strip().splitlines()[:1] or ["(no log)"]
        raise AutotuneError(f"{config} failed to compile for {compiled.arch}: {first[0]}")
    return analyze_cubin(config.name, compiled.cubin, compiled.arch)  # sm_90a for an ARCH_SPECIFIC source


def analyze_cubin(kernel: str, cubin: bytes, arch: str = "sm_90") -> SassReport:
    """Disassemble and count a compiled kernel, known by its name (what a compile process
    of the search has: a Config does not cross a process boundary)."""
    text = disassemble(cubin)
    loop, whole = count(text)[kernel], count(text, scope="kernel")[kernel]
    return SassReport(kernel, arch, loop, whole, resources(cubin, kernel, text), text)
