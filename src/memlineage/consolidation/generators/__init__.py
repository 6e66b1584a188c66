"""Generators turn a selection and its must-preserve set into a candidate output."""

from memlineage.consolidation.generators.base import GenerationRequest, Generator

__all__ = ["GenerationRequest", "Generator"]
