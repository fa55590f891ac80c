"""The documentation's relative links (README.md, docs/): each names a file that exists and, with a
#fragment into a Markdown file, one of its headings. Parsed with markdown-it-py (CommonMark and tables),
so a link is what GitHub renders as one: not text in code spans, and with its reference definitions."""

import re
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from markdown_it import MarkdownIt

from conftest import ROOT

DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
PARSER = MarkdownIt("commonmark").enable("table")


def tokens(path: Path):
    """Every token of the document, the inline ones' children included."""
    for token in PARSER.parse(path.read_text(encoding="utf-8")):
        yield token
        yield from token.children or ()


def anchors(path: Path) -> set[str]:
    """The fragments GitHub gives the document's headings: the text lowercased, characters other than
    letters, digits, '_', '-' and spaces dropped, spaces made '-', and '-1', '-2', ... on repeats."""
    found: set[str] = set()
    seen: dict[str, int] = {}  # slug -> headings with it so far
    stream = list(PARSER.parse(path.read_text(encoding="utf-8")))
    for opening, inline in zip(stream, stream[1:]):
        if opening.type == "heading_open":
            text = "".join(c.content for c in inline.children or () if c.type in ("text", "code_inline"))
            slug = re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")
            repeat = seen[slug] = seen.get(slug, -1) + 1
            found.add(f"{slug}-{repeat}" if repeat else slug)
    return found


def relative_links(path: Path) -> list[str]:
    """Link and image targets without a scheme, in document order."""
    targets = [t.attrGet("href" if t.type == "link_open" else "src") for t in tokens(path) if t.type in ("link_open", "image")]
    return [str(t) for t in targets if t and not urlsplit(str(t)).scheme]


def dangling(document: Path, root: Path = ROOT) -> list[str]:
    """The document's relative links that name no file under `root`, or no heading of the Markdown file named."""
    found = []
    for link in relative_links(document):
        part = urlsplit(link)
        target = (document.parent / unquote(part.path)).resolve() if part.path else document
        if not target.exists() or root not in (target, *target.parents):
            found.append(f"{link}: no such file")
        elif part.fragment and target.suffix == ".md" and unquote(part.fragment) not in anchors(target):
            found.append(f"{link}: no heading #{part.fragment} in {target.relative_to(root)}")
    return found


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves_to_a_file_and_heading(document):
    assert not dangling(document), f"{document.relative_to(ROOT)}: " + "; ".join(dangling(document))


def test_the_link_check_sees_links_headings_and_what_dangles(tmp_path):
    """The check itself: a link in a table and an image count, a link in a code span does not, repeated
    headings get GitHub's numbered fragments, and a missing file or heading is reported."""
    doc = tmp_path / "doc.md"
    doc.write_text("# Spark (`harness/engines/spark/`)\n\n## Notes\n\n## Notes\n\n| a |\n|---|\n| [x](gone.md) |\n\n"
                   "![y](pic.png) `[z](not-a-link.md)` [w](https://example.org/x.md) [v](#notes-1) [u](doc.md#notes-2)\n",
                   encoding="utf-8")
    (tmp_path / "pic.png").write_bytes(b"")
    assert relative_links(doc) == ["gone.md", "pic.png", "#notes-1", "doc.md#notes-2"]
    assert anchors(doc) == {"spark-harnessenginesspark", "notes", "notes-1"}
    assert dangling(doc, tmp_path) == ["gone.md: no such file", "doc.md#notes-2: no heading #notes-2 in doc.md"]
