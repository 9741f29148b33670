"""Running several runners on the same inputs and comparing their outputs."""
from polygraphy._core import (
    AccuracyResult,
    Comparator,
    CompareFunc,
    DataLoader,
    IterationResult,
    PostprocessFunc,
    RunResults,
    diff_graphs,
    find_precision,
    match_graphs,
)

__all__ = ["AccuracyResult", "Comparator", "CompareFunc", "DataLoader", "IterationResult", "PostprocessFunc", "RunResults", "diff_graphs", "find_precision", "match_graphs"]
