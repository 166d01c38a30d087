"""Chunking: boundaries, overlap, offsets, and the title and heading in the embedded text."""

from __future__ import annotations

import pytest

from app.knowledge.chunking import chunk, embedded_text


def paragraphs(count: int, length: int = 300) -> str:
    return "\n\n".join(f"Paragraph {i} " + ("word " * length)[: length - 12].strip() + "." for i in range(count))


def test_passages_end_at_paragraph_boundaries_and_overlap():
    text = paragraphs(12)
    chunks = chunk(text, 1000, 150)
    assert len(chunks) > 3
    for piece in chunks[:-1]:
        assert len(piece.text) <= 1000
        assert piece.text.endswith(".")  # cut after a whole paragraph
        assert text[piece.end:piece.end + 2] == "\n\n"
    for before, after in zip(chunks, chunks[1:], strict=False):
        assert after.start < before.end  # overlapping
        assert before.end - after.start <= 150
        assert text[after.start - 1].isspace()  # starts at a word
    for piece in chunks:
        assert text[piece.start:piece.end] == piece.text


def test_without_paragraphs_it_cuts_at_lines_then_words():
    lines = "\n".join(f"line {i} " + "x" * 60 for i in range(60))
    for piece in chunk(lines, 500, 50)[:-1]:
        assert lines[piece.end] == "\n"
    words = " ".join(f"word{i}" for i in range(600))
    pieces = chunk(words, 500, 50)
    for piece in pieces[:-1]:
        assert words[piece.end] == " " and len(piece.text) <= 500
    assert all(words[p.start - 1] == " " for p in pieces[1:])


def test_the_whole_text_is_covered():
    text = paragraphs(20, 170)
    pieces = chunk(text, 600, 100)
    covered = set()
    for piece in pieces:
        covered.update(range(piece.start, piece.end))
    assert all(i in covered for i, char in enumerate(text) if not char.isspace())


def test_heading_and_title_are_in_the_embedded_text():
    text = "# Guide\n\nIntro.\n\n## Settings\n\n" + paragraphs(6)
    pieces = chunk(text, 800, 100)
    assert pieces[-1].heading == "Settings"
    embedded = embedded_text("User guide", pieces[-1].heading, pieces[-1].text)
    assert embedded.startswith("User guide\nSettings\n")
    assert embedded.endswith(pieces[-1].text)


@pytest.mark.parametrize(("size", "overlap"), [(50, 10), (1000, 600), (1000, -1)])
def test_bad_sizes_are_refused(size, overlap):
    with pytest.raises(ValueError):
        chunk("text", size, overlap)
