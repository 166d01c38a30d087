"""The dataset files: `EVALS_PATH` (the repository's evals/ by default), one YAML or JSON file per dataset.

A dataset is named by its file's name without the suffix; one in a folder of `EVALS_PATH` by the folder and
that name (`honesty/claims` is `evals/honesty/claims.yaml`): one level of folders, no dots, so a name never
leaves `EVALS_PATH`.
"""

from __future__ import annotations

import re
from pathlib import Path

from flask import current_app

from app.evals.dataset import CaseError, Dataset, DatasetInvalid, parse

SUFFIXES = (".yaml", ".yml", ".json")
NAME = re.compile(r"^(?:[A-Za-z0-9_-]{1,80}/)?[A-Za-z0-9_-]{1,80}$")


class DatasetMissing(LookupError):
    """No dataset file has that name."""


def folder() -> Path:
    """The folder of the dataset files."""
    configured = current_app.config.get("EVALS_PATH")
    return Path(configured) if configured else Path(current_app.root_path).parent / "evals"


def names(under: str | None = None) -> list[str]:
    """The datasets' names, sorted: those of `EVALS_PATH` and of its folders (or of one folder, `under`)."""
    root = folder()
    if not root.is_dir():
        return []
    found = [] if under else [p.stem for p in root.iterdir() if p.is_file() and p.suffix in SUFFIXES]
    for sub in sorted(p for p in root.iterdir() if p.is_dir() and (under is None or p.name == under)):
        found += [f"{sub.name}/{p.stem}" for p in sub.iterdir() if p.is_file() and p.suffix in SUFFIXES]
    return sorted(name for name in found if NAME.match(name))


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
