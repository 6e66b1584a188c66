"""Generators turn a selection and its must-preserve set into a candidate output."""

from .base import GenerationRequest, Generator

__all__ = ["GenerationRequest", "Generator"]
