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

The file seeds a tenant's stored, versioned configuration (operations/release.py):
a tenant with none stored records the file's settings as version 1 at its first
consolidation, and from then on the stored version is what it consolidates with.
``resolve`` reads the file (and one-off overrides from the command line, field by
field over the tenant's table, over ``[generator]``); ``stored_settings`` builds
the settings of a stored version. The API key is read from
``MEMLINEAGE_OPENAI_API_KEY``, else ``OPENAI_API_KEY``, else ``api_key`` in the
file; it is never shown and never stored.
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
from memlineage.consolidation.wording import WORDINGS
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
    "wording": (str,),
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


def file_settings(
    tenant: str, config: str | os.PathLike[str] | None = None
) -> tuple[dict[str, Any], str | None]:
    """The file's settings for ``tenant`` (``[generator]``, then its own table over it)
    as written, and the file's path; ({}, None) without a file."""
    path = config_path(config)
    doc = read_config(path) if path is not None else {}
    merged = _table(doc, "generator", "generator")
    tenants = _table(doc, "tenants", "tenants")
    tenant_table = _table(_table(tenants, tenant, f"tenants.{tenant}"), "generator",
                          f"tenants.{tenant}.generator")  # fmt: skip
    return {**merged, **tenant_table}, str(path) if path is not None else None


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
    merged, source = file_settings(tenant, config)
    overrides = {"name": generator, "base_url": base_url, "model": model}
    merged.update({k: v for k, v in overrides.items() if v is not None})
    return settings_from(merged, source, environ)


def settings_from(
    values: Mapping[str, Any], source: str | None, environ: Mapping[str, str] | None = None
) -> GeneratorSettings:
    """Settings as a file's table spells them (``name`` and the model's fields), checked."""
    merged = dict(values)
    implied = "openai" if merged.get("model") or merged.get("base_url") else "deterministic"
    name = merged.pop("name", None) or implied
    if name not in GENERATORS:
        raise BadInput(f"unknown generator {name!r}; one of {', '.join(GENERATORS)}",
                       field="generator")  # fmt: skip
    if name == "deterministic":
        return GeneratorSettings("deterministic", None, source)
    return GeneratorSettings("openai", _openai_config(merged, environ), source)


def seed_config(tenant: str, config: str | os.PathLike[str] | None = None) -> dict[str, Any] | None:
    """What the file records as a tenant's first stored configuration, checked first;
    None when it configures nothing for the tenant. The API key is left out."""
    values, source = file_settings(tenant, config)
    if not values:
        return None
    name = settings_from(values, source, environ={}).name  # bad input: refused, nothing stored
    if name == "deterministic":
        return {"generator": name}
    return {"generator": name, **{k: v for k, v in values.items() if k not in ("name", "api_key")}}


def stored_settings(
    config: Mapping[str, Any], tenant: str, environ: Mapping[str, str] | None = None
) -> GeneratorSettings:
    """The settings of a stored configuration (see ``check_stored``). The API key is never
    stored: it comes from the environment, else the file's ``api_key``."""
    values = _stored_values(config)
    if values["name"] == "openai" and api_key_from_environment(environ) is None:
        file_key = file_settings(tenant)[0].get("api_key")
        if file_key is not None:
            values["api_key"] = file_key
    return settings_from(values, None, environ)


def check_stored(config: Mapping[str, Any]) -> None:
    """BadInput unless ``config`` is a configuration to store: ``generator`` names the
    generator, the model's settings are well typed, no API key; other keys (``prompt``,
    ``selector``) are labels."""
    settings_from(_stored_values(config), None, environ={})


def _stored_values(config: Mapping[str, Any]) -> dict[str, Any]:
    if "api_key" in config:
        raise BadInput("is never stored: set MEMLINEAGE_OPENAI_API_KEY", field="api_key")
    values = {k: v for k, v in config.items() if k in _OPENAI_FIELDS}
    return {"name": config.get("generator"), **values}


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
    if config.wording not in WORDINGS:
        raise BadInput(f"must be one of {', '.join(WORDINGS)}", field="generator.wording")
    if config.timeout <= 0:
        raise BadInput("must be positive", field="generator.timeout")
    window, answer = config.context_tokens, config.max_output_tokens
    if window is not None and answer is not None and answer >= window:
        raise BadInput("must be less than context_tokens", field="generator.max_output_tokens")
    return config
