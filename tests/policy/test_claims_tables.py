"""The word tables: one documented TOML file per language that a contributor extends without touching code."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from app.policy.claims import LEXICON, WordTableError
from app.policy.claims.finder import Finder
from app.policy.claims.lexicon import WORDS, expand, load
from app.policy.claims.reading import read
from app.policy.claims.table_schema import LANGUAGE

README = (WORDS / "README.md").read_text(encoding="utf-8")


def test_five_languages_at_least_load_from_their_tables():
    assert {"en", "it", "fr", "es", "de"} <= set(LEXICON.languages)
    assert {path.stem for path in WORDS.glob("*.toml")} == {*LEXICON.languages, "kinds"}


@pytest.mark.parametrize("key", sorted({(section, key) for section, spec in LANGUAGE["properties"].items()
                                        for key in spec.get("properties", {})}), ids=lambda key: ".".join(key))
def test_the_readme_explains_every_table(key):
    section, name = key
    assert f"`[{section}]`" in README, f"words/README.md: add a row for [{section}]"
    assert f"`{name}`" in README or section in ("done", "past", "first_person_past"), (
        f"words/README.md: say what [{section}] {name} is for")


def test_braces_expand_to_every_form():
    assert expand("creat{o,a,i,e}") == ["creato", "creata", "creati", "create"]
    assert expand("créé{,e,s,es}") == ["créé", "créée", "créés", "créées"]
    assert expand("{a,b}{c,d}") == ["ac", "ad", "bc", "bd"] and expand("plain") == ["plain"]


def test_entries_are_normalised_like_an_answer():
    assert "'ve" in LEXICON.splitter.suffixes and "l'" in LEXICON.splitter.prefixes
    assert LEXICON.grammar.words["ausserdem"]["de"]["coordinators"]  # written "außerdem" and "ausserdem"
    assert LEXICON.grammar.words["créé"]["fr"]["done"] == "create"


def _copy(tmp_path: Path) -> Path:
    folder = tmp_path / "words"
    shutil.copytree(WORDS, folder)
    return folder


@pytest.mark.parametrize(("file", "old", "new", "message"), [
    ("fr.toml", 'prefixes = ["j\'"', 'prefixes = ["j \'"', "fr.toml: contractions.prefixes.0"),
    ("en.toml", "window = 5", "window = 50", "en.toml: grammar.window"),
    ("en.toml", "[objects]\n", "[objects]\nwidget = [\"widget\"]\n", "unknown kinds ['widget']"),
    ("it.toml", 'code = "it"', 'code = "xx"', "name the file after it"),
    ("es.toml", '[detect]', '[detected]', "es.toml"),
    ("kinds.toml", '"create field" = ["update table", "create table"]', '"create field" = ["update tabel"]',
     "unknown action or kind"),
    ("de.toml", 'markers = ["der"', 'markers = [3, "der"', "de.toml: detect.markers.0"),
])
def test_a_broken_table_fails_at_load_naming_the_file_and_the_place(tmp_path, file, old, new, message):
    folder = _copy(tmp_path)
    path = folder / file
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    with pytest.raises(WordTableError, match=re.escape(message)):
        load(folder)


ESPERANTO = """
[language]
code = "eo"
name = "Esperanto"

[detect]
markers = ["la", "kaj", "mi", "estas"]

[grammar]
past_is_done = true
window = 4

[done]
create = ["kreis", "aldonis"]
delete = ["forigis"]

[subjects]
first_person = ["mi", "ni"]
other_persons = ["vi", "li", "ŝi"]
pronouns = ["ĝin", "ĝi"]

[auxiliaries]
perfect = []
passive = ["estis"]

[guards]
negation = ["ne", "nenion"]
modal = ["povas", "volas"]
conditional = ["se"]

[clauses]
breaks = ["sed", "ke"]
coordinators = ["kaj"]

[phrases]
determiners = ["la"]
prepositions = ["al", "en"]

[time]
earlier = ["antaŭe"]

[state]
completion = ["farita", "preta"]
now = ["nun"]
verbs = ["estas", "havas"]

[objects]
table = ["tabelon", "tabelo"]
row = ["vicojn", "vicoj"]

[numbers]
3 = ["tri"]

[contractions]

[signals]
"""


def test_a_new_language_needs_only_its_table(tmp_path):
    folder = _copy(tmp_path)
    (folder / "eo.toml").write_text(ESPERANTO, encoding="utf-8")
    lexicon = load(folder)
    reading = read("Mi kreis la tabelon Kontaktoj kaj aldonis tri vicojn. Mi ne forigis ĝin. Se vi volas, mi "
                   "povas forigi ĝin. Farita!", lexicon)
    assert reading.language == "eo"
    found = [(c.action, c.object, c.target, c.container, c.count, c.language) for c in Finder(reading, lexicon).run()]
    assert found == [("create", "table", "Kontaktoj", None, None, "eo"), ("create", "row", None, "Kontaktoj", 3, "eo"),
                     (None, None, None, None, None, "eo")]
