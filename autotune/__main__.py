"""`python -m autotune ...`: the command line, as `autotune ...` (autotune.cli)."""
import importlib

# importlib, as the package root does: the root stays below every layer (tests/test_layout.py)
importlib.import_module("autotune.cli").main()
