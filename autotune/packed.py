"""Results databases kept gzip'd (benchmarks/data's *.sqlite.gz, a tenth of their size) read as they are: a
reader asks for the plain file and gets one unpacked once per version of the packed file. Only reads: a search
or a measurement writes to a plain SQLite file, and a .gz path given to one is refused as not being SQLite."""
from __future__ import annotations

import gzip
import hashlib
import os
import shutil
import tempfile
from pathlib import Path

from autotune.errors import AutotuneError


def unpacked(path: str | Path) -> Path:
    """The plain database to read for `path`: a .gz file unpacked into the temporary folder (under a name from
    its path, size and modification time, so an edited file is unpacked again and the same one never twice),
    any other path as it is."""
    path = Path(path)
    if path.suffix != ".gz":
        return path
    stat = path.stat()
    version = hashlib.sha256(f"{path.resolve()}:{stat.st_size}:{stat.st_mtime_ns}".encode()).hexdigest()[:16]
    plain = Path(tempfile.gettempdir()) / f"autotune-unpacked-{os.getuid()}" / version / path.stem
    if plain.is_file():
        return plain
    plain.parent.mkdir(parents=True, exist_ok=True)
    part = plain.with_name(f"{plain.name}.{os.getpid()}.part")  # renamed when whole: a reader never sees half
    try:
        with gzip.open(path) as src, part.open("wb") as dst:
            shutil.copyfileobj(src, dst)
    except (OSError, EOFError) as exc:  # not gzip, truncated, a full disk
        part.unlink(missing_ok=True)
        raise AutotuneError(f"cannot unpack database {path}: {exc}; pass --db with an SQLite file, or one "
                            f"gzip'd whole") from None
    os.replace(part, plain)
    return plain
