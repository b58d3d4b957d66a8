"""What the command line does, as a Python API: search, measure, verify, describe the space,
export a kernel. cli.py parses options and calls these."""
