"""What a bundle, trace, tool or parameter says, escaped for where it goes: one function per output kind.

A folder name, a ``kernel.info`` line, a probe name, a ``bundle.json`` field or a tool's error text is
data: it never becomes live markup, a link the text did not mean, a spreadsheet formula or a terminal
control sequence. Every renderer passes such strings through one of these (issue 47, family 1):

* :func:`md_text`: Markdown text, a table cell included (the notebooks' Markdown outputs, ``summary.md``,
  the results' ``.md`` tables): HTML's ``& < >`` as entities, Markdown's syntax characters (``$`` of math
  too) backslash-escaped, no URL autolinked, runs of whitespace and line breaks as one space (a cell or a
  sentence stays on its line);
* :func:`md_code`: inline code: a code span fenced by more backticks than any run inside (``<code>`` with
  escaped text when it holds a ``|``, which would split a table cell);
* :func:`md_link`: a link whose target passed :func:`href`, else the text alone;
* :func:`html_text`, :func:`html_attr`: HTML element text, a quoted attribute value;
* :func:`href`: a link target: a relative path or an http(s) URL, percent-encoded; anything else
  (``javascript:``, ``data:``, ``//host``) is refused (None);
* :func:`csv_cell`: a CSV cell: a text cell that a spreadsheet would take for a formula (``=``, ``+``,
  ``-``, ``@``, tab, CR first) starts with ``'``; numbers, text that is a plain number and a lone ``-``
  stay as they are;
* :func:`terminal`: text for a terminal or a log line: C0 and C1 control characters, DEL and the
  bidirectional overrides shown as ``\\x1b`` / ``\\u202e``; newlines and tabs kept only when asked.

Strings the suite writes itself (section titles, fixed prose) are not passed through these.
"""

from __future__ import annotations

import html
import re
from typing import Any
from urllib.parse import quote

# Markdown's syntax characters that can start or end a construct inside a line: emphasis, code, links and
# images (their brackets: a "(" makes no link without a "]" before it), tables, strikethrough, headings,
# math (CommonMark lets every ASCII punctuation be backslash-escaped).
# An underscore between two letters or digits (``running_cycles``) can neither open nor close emphasis: left
# as it is, so that names stay readable in the .md files.
_MD_SPECIAL = re.compile(r"([\\`*\[\]|#!~$]|(?<![^\W_])_|_(?![^\W_]))")
_LIST_START = re.compile(r"^\s*(?:[-+]|\d+\.)(?=\s|$)")
_SPACES = re.compile(r"[ \t\r\n\x0b\x0c\x85\u2028\u2029]+")
_LINE_BREAKS = re.compile(r"\r\n|[\r\n\x0b\x0c\x85\u2028\u2029]")


def md_text(text: Any) -> str:
    """``text`` as literal Markdown text on one line (a paragraph's words or a table cell)."""
    s = _SPACES.sub(" ", str(text))  # a tab or spaces first would make a code block
    s = s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    s = _MD_SPECIAL.sub(r"\\\1", s)
    s = s.replace("://", "\\://")  # no URL in the text becomes a link (GFM's autolinks)
    # At the start of a paragraph, "- x", "+ x" and "1. x" would make a list.
    return _LIST_START.sub(lambda m: m.group(0)[:-1] + "\\" + m.group(0)[-1], s, count=1)


def md_code(text: Any) -> str:
    """``text`` as inline code in Markdown, on one line: a code span whose fence is longer than any run of
    backticks inside (CommonMark), so that nothing in it can end it; as ``<code>`` holding :func:`md_text`
    when it holds a ``|`` (which would split a table cell even inside a code span) or is blank."""
    s = _LINE_BREAKS.sub(" ", str(text))
    if "|" in s or not s.strip():
        return f"<code>{md_text(s)}</code>"
    fence = "`" * (max((len(run) for run in re.findall(r"`+", s)), default=0) + 1)
    pad = " " if s[0] in "` " or s[-1] in "` " else ""  # one space each side is taken off again
    return f"{fence}{pad}{s}{pad}{fence}"


_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
# Kept as they are in a URL: its delimiters (RFC 3986) and the percent sign of what is already encoded;
# not ( ) ' " < > ` or space, which end a Markdown link or an HTML attribute.
_URL_SAFE = ":/?#[]@!$&*+,;=%~"


def href(target: Any) -> str | None:
    """``target`` as a link target: an http(s) URL or a relative (or absolute) path, percent-encoded so that
    neither Markdown nor HTML can end it early; None for anything else (``javascript:``, ``data:``,
    ``file:``, a protocol-relative ``//host``, control characters)."""
    s = str(target)
    if not s or any(ord(ch) < 0x20 or 0x7F <= ord(ch) < 0xA0 for ch in s):
        return None
    if _SCHEME.match(s):  # a URL: only the web's
        if s.split(":", 1)[0].lower() not in ("http", "https") or not s.split(":", 1)[1].startswith("//"):
            return None
        return quote(s, safe=_URL_SAFE)
    if s.startswith("//") or s.startswith("\\"):  # another host, for a browser
        return None
    # A path: ':' encoded too, so that no first segment ("javascript:x") reads as a scheme.
    return quote(s, safe="/")


def md_link(text: Any, target: Any) -> str:
    """A Markdown link ``[text](target)``, both escaped; the text alone when :func:`href` refuses the target."""
    url = href(target)
    return f"[{md_text(text)}]({url})" if url is not None else md_text(text)


def html_text(text: Any) -> str:
    """``text`` as HTML element text (``& < >`` as entities; quotes as they are)."""
    return html.escape(str(text), quote=False)


def html_attr(text: Any) -> str:
    """``text`` as a quoted HTML attribute value (quotes as entities too)."""
    return html.escape(str(text), quote=True)


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_PLAIN_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|[+-]?(?:inf|nan)", re.I)


def csv_cell(value: Any) -> Any:
    """``value`` for a CSV cell: a string a spreadsheet would run as a formula gets a leading ``'``
    (OWASP's rule); numbers, strings that are a plain number (``-1.5``) and a lone sign (``-``, the tables'
    "no value", which computes nothing) are returned as they are."""
    if (not isinstance(value, str) or len(value) < 2 or not value.startswith(_FORMULA_START)
            or _PLAIN_NUMBER.fullmatch(value)):
        return value
    return "'" + value


# C0 controls, DEL, C1 controls; the bidirectional embeddings/overrides/isolates ("Trojan Source").
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_CONTROL_BUT_LINES = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _shown(m: re.Match[str]) -> str:
    c = ord(m.group(0))
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def terminal(text: Any, lines: bool = True) -> str:
    """``text`` safe to print: every control character (ESC, BEL, CR, backspace, C1, DEL, bidi overrides)
    shown as an escape (``\\x1b``); ``\\n`` and ``\\t`` kept when ``lines`` (several lines of output),
    shown escaped too when not (one line: a name, a value)."""
    return (_CONTROL_BUT_LINES if lines else _CONTROL).sub(_shown, str(text))
