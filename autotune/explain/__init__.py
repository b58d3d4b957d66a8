"""Explaining a number: SASS counts (explain.sass), the ceiling model (explain.model; its shared-memory
bank models: explain.banks), the counts and model columns of a result row (explain.counts), and the
report with its plots."""
