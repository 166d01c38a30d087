"""The dataset files: `EVALS_PATH` (the repository's evals/ by default), one YAML or JSON file per dataset."""

from __future__ import annotations

import re
from pathlib import Path

from flask import current_app

from app.evals.dataset import CaseError, Dataset, DatasetInvalid, parse

SUFFIXES = (".yaml", ".yml", ".json")
NAME = re.compile(r"^[A-Za-z0-9_-]{1,80}$")


class DatasetMissing(LookupError):
    """No dataset file has that name."""


def folder() -> Path:
    """The folder of the dataset files."""
    configured = current_app.config.get("EVALS_PATH")
    return Path(configured) if configured else Path(current_app.root_path).parent / "evals"


def names() -> list[str]:
    """The datasets' names, sorted."""
    root = folder()
    if not root.is_dir():
        return []
    return sorted(p.stem for p in root.iterdir() if p.suffix in SUFFIXES and NAME.match(p.stem))


def path_of(name: str) -> Path:
    """The file of a dataset; raise DatasetMissing for an unknown or malformed name."""
    if NAME.match(name or ""):
        for suffix in SUFFIXES:
            candidate = folder() / f"{name}{suffix}"
            if candidate.is_file():
                return candidate
    raise DatasetMissing(f"There is no dataset named {name!r} in {folder()}.")


def read_text(name: str) -> str:
    """The dataset file's text."""
    return path_of(name).read_text(encoding="utf-8")


def load(name: str) -> Dataset:
    """Read and validate a dataset by name, or from a path to a file."""
    candidate = Path(name)
    if candidate.suffix in SUFFIXES and candidate.is_file():
        return parse(candidate.read_text(encoding="utf-8"))
    return parse(read_text(name))


def save_text(name: str, text: str) -> Dataset:
    """Validate the text and write it to the dataset's file; raise DatasetInvalid, writing nothing, if bad."""
    dataset = parse(text)
    if not NAME.match(name or ""):
        raise DatasetInvalid([CaseError(case="-", path="name", reason="use letters, digits, - and _")])
    try:
        target = path_of(name)
    except DatasetMissing:
        target = folder() / f"{name}.yaml"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    return dataset
