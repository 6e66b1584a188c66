"""Which generator a tenant consolidates with: a TOML file, the environment, the command line.

The file is ``$MEMLINEAGE_CONFIG``, else ``./memlineage.toml`` when it exists::

    [generator]                 # every tenant's default
    name = "openai"             # or "deterministic" (the default without a file)
    base_url = "http://127.0.0.1:8000/v1"
    model = "qwen2.5-7b-instruct"
    temperature = 0
    seed = 7

    [tenants.acme.generator]    # what differs for tenant acme
    model = "gpt-4o-mini"
    base_url = "https://api.openai.com/v1"

Precedence, field by field: the command line, then the tenant's table, then
``[generator]``. The API key is read from ``MEMLINEAGE_OPENAI_API_KEY``, else
``OPENAI_API_KEY``, else ``api_key`` in the file; it is never shown.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from memlineage.consolidation.generators.base import Generator
from memlineage.consolidation.generators.deterministic import DeterministicGenerator
from memlineage.consolidation.generators.openai import (
    FORMAT_MODES,
    OpenAIConfig,
    OpenAIGenerator,
    api_key_from_environment,
)
from memlineage.errors import BadInput

CONFIG_VARIABLE = "MEMLINEAGE_CONFIG"
DEFAULT_FILE = "memlineage.toml"
GENERATORS: tuple[str, ...] = ("deterministic", "openai")

_OPENAI_FIELDS = {f.name: f for f in fields(OpenAIConfig)}
_TYPES: dict[str, tuple[type, ...]] = {
    "model": (str,),
    "base_url": (str,),
    "api_key": (str,),
    "temperature": (int, float),
    "seed": (int,),
    "timeout": (int, float),
    "max_retries": (int,),
    "backoff": (int, float),
    "max_backoff": (int, float),
    "response_format": (str,),
    "context_tokens": (int,),
    "max_output_tokens": (int,),
}


@dataclass(frozen=True)
class GeneratorSettings:
    """A resolved choice: the generator's name and, for ``openai``, how to reach the model."""

    name: str = "deterministic"
    openai: OpenAIConfig | None = None
    source: str | None = None  # the file it came from, if any

    def to_json(self) -> dict[str, Any]:
        return {
            "generator": self.name,
            "openai": self.openai.to_json() if self.openai else None,
            "source": self.source,
        }


def config_path(path: str | os.PathLike[str] | None = None) -> Path | None:
    """The configuration file to read: ``path``, ``$MEMLINEAGE_CONFIG``, or ./memlineage.toml."""
    if path is not None:
        return Path(path)
    if os.environ.get(CONFIG_VARIABLE):
        return Path(os.environ[CONFIG_VARIABLE])
    default = Path(DEFAULT_FILE)
    return default if default.exists() else None


def read_config(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except FileNotFoundError:
        raise BadInput(f"configuration file {path} not found", field="config") from None
    except tomllib.TOMLDecodeError as exc:
        raise BadInput(f"{path}: {exc}", field="config") from None


def resolve(
    tenant: str,
    *,
    generator: str | None = None,
    base_url: str | None = None,
    model: str | None = None,
    config: str | os.PathLike[str] | None = None,
    environ: Mapping[str, str] | None = None,
) -> GeneratorSettings:
    """The generator settings of ``tenant``: file, tenant table, then the given overrides."""
    path = config_path(config)
    doc = read_config(path) if path is not None else {}
    merged = _table(doc, "generator", "generator")
    tenants = _table(doc, "tenants", "tenants")
    tenant_table = _table(_table(tenants, tenant, f"tenants.{tenant}"), "generator",
                          f"tenants.{tenant}.generator")  # fmt: skip
    merged = {**merged, **tenant_table}
    overrides = {"name": generator, "base_url": base_url, "model": model}
    merged.update({k: v for k, v in overrides.items() if v is not None})
    implied = "openai" if merged.get("model") or merged.get("base_url") else "deterministic"
    name = merged.pop("name", None) or implied
    source = str(path) if path is not None else None
    if name not in GENERATORS:
        raise BadInput(f"unknown generator {name!r}; one of {', '.join(GENERATORS)}",
                       field="generator")  # fmt: skip
    if name == "deterministic":
        return GeneratorSettings("deterministic", None, source)
    return GeneratorSettings("openai", _openai_config(merged, environ), source)


def make_generator(settings: GeneratorSettings) -> Generator:
    if settings.openai is None:
        return DeterministicGenerator()
    return OpenAIGenerator(settings.openai)


def _table(doc: Mapping[str, Any], name: str, path: str) -> dict[str, Any]:
    value = doc.get(name, {})
    if not isinstance(value, Mapping):
        raise BadInput("must be a table", field=path)
    return dict(value)


def _openai_config(values: dict[str, Any], environ: Mapping[str, str] | None) -> OpenAIConfig:
    for key, value in values.items():
        if key not in _OPENAI_FIELDS:
            raise BadInput("unknown setting", field=f"generator.{key}")
        if isinstance(value, bool) or not isinstance(value, _TYPES[key]):
            expected = " or ".join(t.__name__ for t in _TYPES[key])
            raise BadInput(f"must be {expected}", field=f"generator.{key}")
    if not values.get("model"):
        raise BadInput("the openai generator needs a model (--model or model = ...)",
                       field="generator.model")  # fmt: skip
    file_key = values.pop("api_key", None)
    values["api_key"] = api_key_from_environment(environ) or file_key
    config = OpenAIConfig(**values)
    if config.response_format not in FORMAT_MODES:
        raise BadInput(f"must be one of {', '.join(FORMAT_MODES)}",
                       field="generator.response_format")  # fmt: skip
    if config.timeout <= 0:
        raise BadInput("must be positive", field="generator.timeout")
    window, answer = config.context_tokens, config.max_output_tokens
    if window is not None and answer is not None and answer >= window:
        raise BadInput("must be less than context_tokens", field="generator.max_output_tokens")
    return config
