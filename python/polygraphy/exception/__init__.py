"""Every library error is a PolygraphyException (or a subclass) carrying the library's one-line message."""
from polygraphy._core import (
    PolygraphyException,
    PolygraphyFormatError,
    PolygraphyInputError,
    PolygraphyInternalError,
    PolygraphyModelError,
    PolygraphyUnsupportedError,
    PolygraphyUsageError,
)

__all__ = [
    "PolygraphyException",
    "PolygraphyFormatError",
    "PolygraphyInputError",
    "PolygraphyInternalError",
    "PolygraphyModelError",
    "PolygraphyUnsupportedError",
    "PolygraphyUsageError",
]
