"""Run the command line from a checkout without installing: `python cli.py search --M 4096`.

The commands themselves live in the package autotune/cli/, so that an installed wheel carries them
inside the package instead of a top-level module named `cli`.
"""
from autotune.cli import main

if __name__ == "__main__":
    main()
