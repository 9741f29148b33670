"""Helpers for functions: `extend`, a decorator that extends a loader (or any callable) with a function."""
import functools
import inspect

from polygraphy.exception import PolygraphyUsageError

__all__ = ["extend"]


def extend(extend_func):
    """Decorator: returns a callable that calls `extend_func`, then the decorated function with its results.

    The decorated function receives the return value of `extend_func` (a tuple is unpacked into several
    arguments). When it returns None, the extended callable returns what `extend_func` returned, so it
    keeps the interface of `extend_func` (a loader stays a loader of the same thing); otherwise its own
    return value replaces that of `extend_func`. If it takes more parameters than `extend_func` returns
    values, the arguments of the call are passed first, then the return values, by name. A parameter
    count that fits neither case raises PolygraphyUsageError when the extended callable is called.

        @func.extend(OnnxFromPath("model.onnx"))
        def load_model(model):
            model.graph_name = "renamed"  # returns None: load_model() returns the model
    """

    def extend_decorator(func):
        @functools.wraps(func)
        def extended_func(*args, **kwargs):
            extend_retval = extend_func(*args, **kwargs)
            extend_results = extend_retval if isinstance(extend_retval, tuple) else (extend_retval,)
            params = list(inspect.signature(func).parameters.values())

            if not params and extend_results == (None,):
                func_retval = func()
            elif len(params) == len(extend_results):
                func_retval = func(*extend_results)
            elif len(params) == len(extend_results) + len(args) + len(kwargs):
                # The call's own arguments come first; the results go by name so that they follow **kwargs.
                result_names = [param.name for param in params[len(params) - len(extend_results) :]]
                func_retval = func(*args, **kwargs, **dict(zip(result_names, extend_results)))
            else:
                raise PolygraphyUsageError(
                    f"func.extend: {getattr(func, '__name__', func)}() takes {len(params)} parameter(s) but "
                    f"{getattr(extend_func, '__name__', type(extend_func).__name__)} returned "
                    f"{len(extend_results)} value(s) (called with {len(args) + len(kwargs)} argument(s))"
                )
            return extend_retval if func_retval is None else func_retval

        return extended_func

    return extend_decorator
