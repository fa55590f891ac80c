"""The documentation's relative links (README.md, docs/): each names a file that exists and, with a
#fragment into a Markdown file, one of its headings. Parsed with markdown-it-py (CommonMark and tables),
so a link is what GitHub renders as one: not text in code spans, and with its reference definitions."""

import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from markdown_it import MarkdownIt

from conftest import ROOT


def documents(root: Path) -> list[Path]:
    """The README and every Markdown file under docs/, those in its subfolders (docs/models/) included."""
    return [root / "README.md", *sorted((root / "docs").rglob("*.md"))]


DOCUMENTS = documents(ROOT)
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


def test_the_documents_include_those_in_subfolders_of_docs(tmp_path):
    """A model's document (docs/models/<name>.md) is checked like the others, its links one level deeper."""
    (tmp_path / "docs" / "models").mkdir(parents=True)
    for name in ("README.md", "docs/ARCHITECTURE.md", "docs/models/kraft.md"):
        (tmp_path / name).write_text("# Title\n", encoding="utf-8")
    assert documents(tmp_path) == [tmp_path / "README.md", tmp_path / "docs" / "ARCHITECTURE.md",
                                   tmp_path / "docs" / "models" / "kraft.md"]
    model = tmp_path / "docs" / "models" / "kraft.md"
    model.write_text("[up](../ARCHITECTURE.md#title) [same level](ARCHITECTURE.md)\n", encoding="utf-8")
    assert dangling(model, tmp_path) == ["ARCHITECTURE.md: no such file"]


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


def code_spans(path: Path) -> list[str]:
    return [t.content for t in tokens(path) if t.type == "code_inline"]


def test_the_commands_in_contributing_exist_with_their_options():
    """Each `python -m harness CMD --opt ...` (or `CMD SPEC --opt ...`) and `python ci/gate.py --opt ...`
    quoted in docs/CONTRIBUTING.md names a real command and options it takes."""
    from harness.cli import cli
    from harness.registry import spec_names
    gate_help = subprocess.run([sys.executable, str(ROOT / "ci" / "gate.py"), "--help"], capture_output=True,
                               text=True, check=True).stdout
    checked, wrong = 0, []
    for span in code_spans(ROOT / "docs" / "CONTRIBUTING.md"):
        words = span.split()
        if words[:3] == ["python", "-m", "harness"]:
            words = words[3:]
        elif words[:2] == ["python", "ci/gate.py"]:
            wrong += [f"{span}: {w}" for w in words[2:] if w.startswith("--") and w not in gate_help]
            checked += 1
            continue
        elif not (len(words) > 1 and words[0] in cli.commands and words[1] in spec_names()):
            continue
        command = cli.commands.get(words[0]) if words else None
        if command is None:
            wrong.append(f"{span}: no command {words[:1]}")
            continue
        options = {o for p in command.params for o in p.opts}
        wrong += [f"{span}: {w}" for w in words[1:] if w.startswith("--") and w not in options]
        checked += 1
    assert checked >= 10 and not wrong, wrong


def test_architecture_describes_the_harness_in_about_600_lines():
    """docs/ARCHITECTURE.md keeps the harness; each protocol's modelling decisions live in
    docs/models/<name>.md (issue 38). A protocol's section still in the file while it moves is not counted."""
    from harness.registry import spec_names
    moving = {f"## The {name} model" for name in spec_names() if name != "example"}
    counted, inside = 0, False
    for line in (ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            inside = any(line.startswith(heading) for heading in moving)
        counted += not inside
    assert counted <= 620, counted


def test_performance_opens_with_the_current_figures_each_dated_and_linked():
    """docs/PERFORMANCE.md's first section is a table of the latest figures, each row with its date and a
    link to the journal entry below it."""
    text = (ROOT / "docs" / "PERFORMANCE.md").read_text(encoding="utf-8")
    first = text.split("\n## ")[1]
    assert first.startswith("Current figures")
    rows = [r for r in first.splitlines() if r.startswith("| ") and not r.startswith("| what")]
    assert len(rows) >= 8
    for row in rows:
        assert re.search(r"\| 20\d\d-\d\d-\d\d \|", row) and re.search(r"\]\(#[a-z0-9-]+\)", row), row
