"""Kernel names in tests. A name is sgemm_<family>_ then the tags of its parameters (autotune/space), in the
family's order; the tests compare sets of tags, so that a tag a new default adds, wherever the family puts it,
leaves alone a test about another tag."""
from __future__ import annotations


def tags(kernel: str) -> set[str]:
    """The tags of a kernel's name ("loaded " in front, as a recording launcher writes it, dropped)."""
    return set(kernel.removeprefix("loaded ").split("_")[2:])
