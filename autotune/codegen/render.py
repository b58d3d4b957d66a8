"""Code generation: a validated config in, readable CUDA source out (Jinja2 templates)."""
from __future__ import annotations

import hashlib
from functools import lru_cache
from importlib import resources
from pathlib import Path

import jinja2

from autotune.errors import SpaceError
from autotune.space import Config, Limits, violations
from autotune.space.blas import kernel_params


@lru_cache(maxsize=1)
def templates_dir() -> Path:
    """The templates of the code that runs: in a checkout, its top-level templates/ (even when an
    editable install of another checkout maps autotune.templates elsewhere, as PYTHONPATH=checkout
    does); installed from a wheel, the autotune.templates package."""
    checkout = Path(__file__).resolve().parents[2] / "templates"
    if (checkout / "blocked.cu.j2").is_file():
        return checkout
    return Path(str(resources.files("autotune.templates")))


@lru_cache(maxsize=1)
def _env() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates_dir())),
        undefined=jinja2.StrictUndefined,  # a missing parameter is an error, not an empty string
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )
    env.globals["blas_params"] = kernel_params()  # the BLAS=1 kernels' signature (space.blas)
    return env


def template_text(name: str) -> str:
    return (templates_dir() / name).read_text()


def template_hash(config: Config) -> str:
    return sha256(template_text(config.family.template))


def sha256(text: str | bytes) -> str:
    data = text.encode() if isinstance(text, str) else text
    return hashlib.sha256(data).hexdigest()


def render_template(name: str, **values: object) -> str:
    """Any template of the folder (the exported launchers) with the given values."""
    return _env().get_template(name).render(**values)


def render(config: Config, limits: Limits = Limits()) -> str:
    """The kernel's CUDA source. Refuses a config outside the space before rendering."""
    bad = violations(config, limits)
    if bad:
        raise SpaceError(f"{config} is outside the space: {bad[0]}")
    try:
        template = _env().get_template(config.family.template)
        return template.render(name=config.name, **config.values, **config.derived)
    except jinja2.TemplateError as exc:
        raise SpaceError(f"template {config.family.template} failed to render {config}: {exc}") from exc
