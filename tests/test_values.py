"""Canonical value comparison: units through the project's alias table, money, strings."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memlineage.meaning.values import (
    UNIT_ALIASES,
    canonical,
    registry,
    resolve_unit,
    same_value,
    unit_display,
    unit_identity,
)

finite = st.floats(min_value=-1e9, max_value=1e9, allow_nan=False, allow_infinity=False)
magnitudes = st.floats(min_value=1e-3, max_value=1e9, allow_nan=False, allow_infinity=False)
unit_spellings = st.sampled_from(sorted(UNIT_ALIASES))


@pytest.mark.parametrize(
    ("a", "a_unit", "b", "b_unit"),
    [
        (5, "km", 5000, "m"),
        (5, "kilometers", 5000, "metre"),
        (1, "mi", 1.609344, "km"),
        (1, "h", 60, "min"),
        (2, "GB", 2000, "MB"),
        (1, "KiB", 1024, "B"),
        (1, "B", 8, "bit"),
        (0, "°C", 32, "°F"),
        (100, "degrees celsius", 212, "fahrenheit"),
        (50, "%", 50, "percent"),
        ("4,500", "USD", 4500, "$"),
        (20, "EUR", 20, "€"),
        (1, "kWh", 1, "kilowatt-hour"),
        ("ORION-12", None, " orion-12 ", None),
    ],
)
def test_equal_values(a: object, a_unit: str | None, b: object, b_unit: str | None) -> None:
    assert same_value(a, a_unit, b, b_unit)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("a", "a_unit", "b", "b_unit"),
    [
        (5, "mi", 5, "km"),  # same number, different unit
        (4500, None, 4050, None),  # close numbers
        (4500, "USD", 4050, "USD"),
        (5, "USD", 5, "EUR"),  # no exchange rates
        (5, "%", 5, "B"),  # both dimensionless to pint
        (100, "%", 1, "B"),  # 1 dimensionless vs 8 bit
        (100, "%", 1, None),  # a percentage is not a plain number
        (1, "B", 1, "bit"),
        (5, "km", 5, "kg"),
        (5, "km", 5, None),
        (5, "km", "5 km", None),  # a string stays a string without a unit
        ("00123", None, 123, None),  # leading zeros of an account number matter
        (True, None, "true", None),
        (1, "month", 30, "day"),
    ],
)
def test_different_values(a: object, a_unit: str | None, b: object, b_unit: str | None) -> None:
    assert not same_value(a, a_unit, b, b_unit)  # type: ignore[arg-type]


def test_registry_is_built_once() -> None:
    assert registry() is registry()


def test_free_text_never_reaches_pint() -> None:
    # pint would parse "meter * 0 + 5" or raise on junk; the alias table simply does not know it
    assert resolve_unit("meter * 0 + 5") is None
    assert resolve_unit("__import__('os')") is None
    assert canonical(5, "furlongs per fortnight") == ("unit:furlongs per fortnight", "5")
    assert unit_identity("Furlongs") == "?furlongs"


def test_every_alias_resolves_and_converts() -> None:
    for spelling in UNIT_ALIASES:
        name = resolve_unit(spelling)
        assert name is not None, spelling
        family, magnitude = canonical(1, spelling)
        assert family and magnitude, spelling
        assert resolve_unit(unit_display(name)) == name


@given(magnitudes, unit_spellings)
def test_canonical_is_reflexive_and_deterministic(x: float, unit: str) -> None:
    assert canonical(x, unit) == canonical(x, unit)
    assert same_value(x, unit, x, resolve_unit(unit))


@given(finite, unit_spellings, unit_spellings)
def test_same_value_is_symmetric(x: float, u: str, v: str) -> None:
    assert same_value(x, u, x, v) == same_value(x, v, x, u)


@given(magnitudes)
def test_km_m_conversion(x: float) -> None:
    assert same_value(x, "km", x * 1000, "m")
    assert not same_value(x, "km", x, "mi")


@given(magnitudes, st.sampled_from(["km", "kg", "h", "GB", "USD", "%", "B"]))
def test_perturbed_magnitudes_differ(x: float, unit: str) -> None:
    bumped = x * (1 + 1e-6)
    assert not same_value(x, unit, bumped, unit)


@given(magnitudes, unit_spellings, unit_spellings)
def test_different_base_units_never_compare_equal(x: float, u: str, v: str) -> None:
    fu, fv = canonical(x, u)[0], canonical(x, v)[0]
    if fu != fv:
        assert not same_value(x, u, x, v)


@given(st.integers(min_value=-(10**12), max_value=10**12))
def test_ints_and_their_float_and_text_forms_agree(n: int) -> None:
    assert same_value(n, None, float(n), None)
    assert same_value(n, "USD", f"{n:,}", "USD")


@given(st.one_of(st.text(), finite, st.integers(), st.booleans()), st.one_of(st.none(), st.text()))
def test_canonical_never_raises(value: object, unit: str | None) -> None:
    family, magnitude = canonical(value, unit)  # type: ignore[arg-type]
    assert isinstance(family, str) and isinstance(magnitude, str)


def test_non_finite_numbers_are_kept_apart() -> None:
    assert not same_value(math.inf, None, 1e308, None)


def test_ambiguous_currency_symbols_resolve_to_nothing() -> None:
    # '¥' is the yen or the yuan: the extractor keeps '¥600' verbatim instead of guessing
    assert resolve_unit("¥") is None
    assert resolve_unit("JP¥") == "JPY" and resolve_unit("CN¥") == "CNY"
    assert resolve_unit("yuan") == "CNY" and resolve_unit("yen") == "JPY"
    assert not same_value(600, "JP¥", 600, "CN¥")
