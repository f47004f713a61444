"""Issue 47, family 1: every renderer of what a bundle, trace, tool or parameter says, fed hostile strings.

One property over every output kind (``neutrino_ae/escape.py`` and the renderers built on it): Markdown
rendered as the report renders it (nbconvert's Markdown renderer, which passes raw HTML through) holds no
live tag or event attribute and no link other than the one meant, a code span is never broken out of,
the text reads back as it was given; the verdict's HTML likewise; no CSV cell starts a formula; no control
character reaches a terminal."""

from __future__ import annotations

import csv
import html
import io
import re
from html.parser import HTMLParser

from hypothesis import given, settings
from hypothesis import strategies as st

from neutrino_ae.escape import csv_cell, href, html_attr, html_text, md_code, md_link, md_text, terminal
from neutrino_ae.report.claims import SKIPPED, Outcome
from neutrino_ae.report.claims.view import verdict_html
from neutrino_ae.report.results.columns import Columns, markdown_table

#: Pieces hostile strings are made of: markup, link and code syntax, formula starts, control sequences.
PIECES = ["<img src=x onerror=alert(1)>", "<script>alert(2)</script>", "</code>", "<code>", "](javascript:alert(10))",
          "[x]", "(javascript:alert(3))", "javascript:", "`", "``", "|", "*", "_", "~~", "#", "!", "\\", "&amp;",
          "&lt;", "<", ">", '"', "'", "=", "+", "-", "@", "=HYPERLINK(\"http://x\",\"y\")", "1.", "- ", "$x$",
          "\t", "\r", "\n", "\n\n", "\x1b]0;owned\x07", "\x1b[2J", "\x9b", "\x7f", "\u202e", "\x08", "a", "b", " ",
          "http://x.y/", "<a href=javascript:alert(4)>", "'\"><svg onload=alert(5)>"]
hostile = st.one_of(st.lists(st.sampled_from(PIECES), max_size=8).map("".join),
                    st.text(alphabet=st.characters(codec="utf-8", exclude_characters="\x00"), max_size=20))


class _Tags(HTMLParser):
    """Every start tag with its attributes, and the page's text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    handle_startendtag = handle_starttag

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def tags_of(page: str) -> _Tags:
    parser = _Tags()
    parser.feed(page)
    parser.close()
    return parser


#: What our own Markdown and HTML make; anything else came from the data.
OURS = {"p", "code", "a", "table", "thead", "tbody", "tr", "th", "td", "ul", "li", "div", "b", "i", "details",
        "summary", "colgroup", "col", "em", "strong", "br", "h1", "h2", "h3", "h4"}


def assert_inert(page: str, links: tuple[str, ...] = ()) -> _Tags:
    """No tag but ours, no event attribute, no link other than ``links``."""
    found = tags_of(page)
    for tag, attrs in found.tags:
        assert tag in OURS, (tag, page)
        assert not any(name.startswith("on") for name in attrs), (tag, attrs, page)
        if tag == "a":
            assert attrs.get("href") in links, (attrs, page)
    return found


def _number(cell: str) -> bool:
    """A plain number, which a spreadsheet reads as a number, never a formula."""
    try:
        float(cell)
    except ValueError:
        return False
    return cell.strip() == cell and "_" not in cell


def render(markdown: str) -> str:
    from nbconvert.filters.markdown_mistune import markdown2html_mistune

    return markdown2html_mistune(markdown)


def _plain(text: str) -> str:
    """What a Markdown text on one line reads as: line breaks as spaces, whitespace runs as one."""
    return " ".join(re.sub(r"\r\n|[\r\n\x0b\x0c\x85\u2028\u2029]", " ", text).split())


@settings(max_examples=150, deadline=None)
@given(hostile)
def test_every_renderer_keeps_a_hostile_string_data(s):
    # Markdown text and a code span in a sentence: read back as given, nothing live.
    page = render(f"before {md_text(s)} and {md_code(s)} after")
    found = assert_inert(page)
    assert _plain("".join(found.text)) == _plain(f"before {s} and {s} after")
    assert [t for t, _ in found.tags].count("code") == 1
    code = re.search(r"<code>(.*?)</code>", page, re.S)
    assert code and _plain(html.unescape(code.group(1))) == _plain(s)

    # A link: the escaped target or none, the text as given.
    target = f"perfetto/{s}.json"
    page = render(f"* {md_link(s, target)}: 3 blocks")
    found = assert_inert(page, links=(href(target),))
    assert _plain("".join(found.text)) == _plain(f"{s}: 3 blocks")
    assert href(f"javascript:{s}") is None and href(f"//evil/{s}") is None

    # A results table (summary.md, the .md tables): one row, the cells as given, a header named by the data.
    table = markdown_table([s or "x", "value"], [(s, -1.5), ("=1+1", 2)])
    page = render(table)
    found = assert_inert(page)
    cells = re.findall(r"<td>(.*?)</td>", page, re.S)
    assert len(cells) == 4 and _plain(html.unescape(re.sub("<[^>]+>", "", cells[0]))) == _plain(s)
    assert cells[1] == "-1.5"

    # The verdict table, in a Markdown cell as the notebook's top cell puts it.
    o = Outcome(section=s or "x", claim=s, kind=s, status=SKIPPED, expected=s, obtained=s, text=s, source=s,
                tolerance=s, why=s, reason=s, note=s, run_id=s, bundle_digest=s)
    assert_inert(render(f"**Verdict: {md_text(s)}**\n\nClaims:\n\n{verdict_html([o])}\n"))
    assert_inert(f"<div title=\"{html_attr(s)}\">{html_text(s)}</div>")

    # CSV: no cell a spreadsheet would run, numbers as numbers.
    # (A CR inside a cell is written unquoted by Python's csv module and pandas alike, which splits the row
    # for a reader: left out here, a known limit, not a formula.)
    c = s.replace("\r", "")
    head = c if c not in ("", "n", "f") else c + "x"
    text = Columns({head: [c, "-" + c, "@" + c], "n": [-1, -2, 3], "f": [-1.5, 2.0, 3.0]}).csv_text()
    rows = list(csv.reader(io.StringIO(text)))
    for row in rows:
        for cell in row:
            assert len(cell) < 2 or not cell.startswith(("=", "+", "-", "@", "\t", "\r")) or _number(cell), row
    assert [r[1] for r in rows[1:]] == ["-1", "-2", "3"] and [r[2] for r in rows[1:]] == ["-1.5", "2.0", "3.0"]
    assert csv_cell(-3) == -3 and csv_cell("-3") == "-3" and csv_cell("-") == "-"
    assert csv_cell("-x") == "'-x" and csv_cell("=1+1") == "'=1+1"

    # Terminal: no control character at all on one line; only newline and tab in several lines.
    one, several = terminal(s, lines=False), terminal(s)
    assert not re.search(r"[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]", one), one
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]", several), several
