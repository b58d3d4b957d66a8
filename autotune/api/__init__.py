"""What the command line does, as a Python API: search, measure, verify, describe the space,
export a kernel. cli.py parses options and calls these."""

from pathlib import Path

SHAPES = Path(__file__).resolve().parent / "shapes.toml"  # the shape suite, shipped with the package
