"""The search: plan a trial (refused, reused, to measure), measure and record it, tell Optuna.
search.loop runs it; search.study speaks Optuna; search.samplers builds samplers by name;
search.pipeline compiles the next trials' kernels while the GPU measures; search.starts finds the nearest
recorded shapes' winners, and search.ranking orders them with the family defaults into what a search (or a
first-use job) measures first."""

# Names from the registry (no Optuna import): the command line lists them without loading the search.
from autotune.search.kinds import SAMPLERS

__all__ = ["SAMPLERS"]
