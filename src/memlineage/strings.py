"""One rule for every string a caller hands in, and one way to print stored text.

A string is refused (``BadInput`` naming its field) when it holds a lone
surrogate (U+D800..U+DFFF: not encodable as UTF-8, so no backend can store
it) or NUL (U+0000: PostgreSQL cannot store it in text; refusing it on SQLite
too keeps both backends alike). Other control characters are stored as given
and escaped when printed as plain text, so stored escape sequences never
reach a terminal.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import re
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from memlineage.errors import BadInput

_SURROGATE = re.compile("[\ud800-\udfff]")
# C0 and C1 controls and DEL, except newline and tab, which plain text keeps as they are.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")

T = TypeVar("T")


def text_problem(value: str) -> str | None:
    """Why ``value`` cannot be stored, or None."""
    if "\x00" in value:
        return "must not contain the NUL character (U+0000)"
    if _SURROGATE.search(value):
        return "must not contain a lone surrogate (U+D800..U+DFFF); send valid Unicode"
    return None


def check_text(value: str, field: str) -> None:
    problem = text_problem(value)
    if problem is not None:
        raise BadInput(problem, field=field)


def check_strings(value: Any, field: str) -> None:
    """Every string inside ``value`` (mappings, sequences and dataclasses walked), by its path."""
    if isinstance(value, str):
        check_text(value, field)
    elif isinstance(value, Mapping):
        for key, item in value.items():
            name = f"{field}.{key}" if isinstance(key, str) else f"{field}[{key!r}]"
            if isinstance(key, str):
                check_text(key, f"{field} (a key)")
            check_strings(item, name)
    elif isinstance(value, list | tuple | set | frozenset):
        for index, item in enumerate(value):
            check_strings(item, f"{field}[{index}]")
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for spec in dataclasses.fields(value):
            check_strings(getattr(value, spec.name), f"{field}.{spec.name}")


def checked_arguments(function: Callable[..., T], *, skip: frozenset[str]) -> Callable[..., T]:
    """``function`` with every string argument checked before it runs (``skip``: checked there)."""
    signature = inspect.signature(function)

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> T:
        bound = signature.bind(*args, **kwargs)
        for name, value in list(bound.arguments.items())[1:]:  # [0] is self
            if name not in skip:
                check_strings(value, name)
        return function(*args, **kwargs)

    return wrapper


def check_public_methods(cls: type[T], *, skip: frozenset[str] = frozenset()) -> type[T]:
    """Wrap every public method of ``cls`` in :func:`checked_arguments`."""
    for name, member in list(vars(cls).items()):
        if not name.startswith("_") and inspect.isfunction(member):
            setattr(cls, name, checked_arguments(member, skip=skip))
    return cls


def printable(text: str) -> str:
    """``text`` for a terminal: control characters (ESC, BEL, NUL, ...) as ``\\xNN`` escapes."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
