"""Polygraphy's JSON files: RunResults and lists of feed dicts, read and written by the library."""
from polygraphy._core import RunResults, load_run_results_or_inputs, save_inputs


def save_json(obj, dest, description=None):
    """Saves a RunResults or a list of feed dicts to the path `dest` (atomically), as Polygraphy does.

    Other objects raise TypeError: this build writes only Polygraphy's own file formats.
    """
    if isinstance(obj, RunResults):
        obj.save(dest)
    elif isinstance(obj, (list, tuple)):
        save_inputs(list(obj), dest)
    else:
        raise TypeError(f"save_json: cannot save a {type(obj).__name__} (expected RunResults or a list of feed dicts)")


def load_json(src, description=None):
    """Loads a RunResults file, or a list of feed dicts from an inputs file (--save-inputs)."""
    return load_run_results_or_inputs(src)


__all__ = ["save_json", "load_json"]
