"""A value computed on its first read and kept on the instance."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar

_T = TypeVar("_T")


class lazy(Generic[_T]):
    """``functools.cached_property`` without its lock: Python 3.11 takes one on each
    first read, which cost more than most of the values it guards. Two threads
    reading a value for the first time at once both compute it; every use here
    computes the same value from immutable fields, so either may be kept."""

    def __init__(self, compute: Callable[[Any], _T]) -> None:
        self.compute = compute
        self.name = compute.__name__
        self.__doc__ = compute.__doc__

    def __get__(self, instance: Any, owner: type | None = None) -> _T:
        value = self.compute(instance)
        instance.__dict__[self.name] = value  # later reads find it there, not here
        return value
