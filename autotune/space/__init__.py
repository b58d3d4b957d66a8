"""The search space: parameters, their values and the constraints on them (space.config), and
walking it (space.walk). Families (autotune.families) declare themselves with these types."""
from autotune.space.blas import (
                                   BLAS_ARGS,
                                   Operands,
                                   batched,
                                   buffer_sizes,
                                   operand_problems,
                                   stored_shapes,
                                   takes_blas,
                                   tight,
)
from autotune.space.config import (
                                   MAX_ELEMENTS,
                                   PROLOGUE_SUFFIX,
                                   ArchNeed,
                                   Config,
                                   Constraint,
                                   Family,
                                   Fit,
                                   HipSupport,
                                   Launch,
                                   Limits,
                                   Param,
                                   Params,
                                   Prologue,
                                   Value,
                                   arch_refusal,
                                   at_shape,
                                   check_shape,
                                   expand,
                                   make_config,
                                   narrow,
                                   on_device,
                                   shape_violations,
                                   violations,
                                   within,
)
from autotune.space.expr import ceil_div, round_up
from autotune.space.fits import fitted, fitted_around, keeps
from autotune.space.shapes import Shape, nearness, rank_shapes, shape_distance, shape_text
from autotune.space.walk import combinations, count_valid, enumerate_space, iter_valid, random_valid, valid_configs

__all__ = ["BLAS_ARGS", "MAX_ELEMENTS", "Operands", "batched", "buffer_sizes", "operand_problems", "stored_shapes", "takes_blas", "tight", "ArchNeed", "Config", "Constraint", "Family", "HipSupport", "Launch", "Limits", "PROLOGUE_SUFFIX", "Param", "Params", "Prologue", "Shape", "Value",
           "arch_refusal", "ceil_div", "check_shape", "combinations", "count_valid", "enumerate_space", "expand", "Fit", "fitted", "fitted_around", "keeps", "iter_valid",
           "at_shape", "make_config", "narrow", "nearness", "on_device", "random_valid", "rank_shapes", "round_up", "shape_distance", "shape_text",
           "shape_violations", "valid_configs", "violations", "within"]
