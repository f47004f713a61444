"""What a PDF printed by Chromium draws, read back from the file (pypdf): where each figure is on its page.

Chromium writes a tagged PDF: every ``<img>`` is a ``/Figure`` structure element carrying its alt text and
pointing at the marked content (``/MCID``) that draws it on a page. :func:`figures` walks the page content
streams (transformation matrix, clipping set inside marked content, paths, filled and stroked, and images)
and gives each figure's drawn box in PDF points, so a test can tell a figure that is whole (its box inside
the page's printable width, shaped as the figure is) from one that is cut at the edge of the page or of a
scrolling box (an SVG figure is drawn as vector paths, so there is no embedded image to look at).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pypdf import PdfReader
from pypdf.generic import ArrayObject, ContentStream, DictionaryObject, NumberObject

_PAINT = {b"S", b"s", b"f", b"F", b"f*", b"B", b"B*", b"b", b"b*"}


@dataclass(frozen=True)
class Figure:
    alt: str
    page: int  # 0-based
    box: tuple[float, float, float, float]  # x0, y0, x1, y1 in points, as drawn (clipped where the page clips it)

    @property
    def aspect(self) -> float:
        return (self.box[2] - self.box[0]) / (self.box[3] - self.box[1])


def _mul(a: list[float], b: list[float]) -> list[float]:
    return [a[0] * b[0] + a[1] * b[2], a[0] * b[1] + a[1] * b[3], a[2] * b[0] + a[3] * b[2],
            a[2] * b[1] + a[3] * b[3], a[4] * b[0] + a[5] * b[2] + b[4], a[4] * b[1] + a[5] * b[3] + b[5]]


def _pt(m: list[float], x: float, y: float) -> tuple[float, float]:
    return m[0] * x + m[2] * y + m[4], m[1] * x + m[3] * y + m[5]


def _bbox(points: list[tuple[float, float]]) -> list[float]:
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    return [min(xs), min(ys), max(xs), max(ys)]


def _drawn(reader: PdfReader) -> dict[tuple[int, int], list[float]]:
    """(page, MCID) -> the box of everything that marked content draws."""
    boxes: dict[tuple[int, int], list[float]] = {}
    for page_no, page in enumerate(reader.pages):
        m, stack, path, marked, clip = [1.0, 0, 0, 1.0, 0, 0], [], [], [], None
        props = page["/Resources"].get("/Properties", {})

        def add(points: list[tuple[float, float]], clip=None, marked=marked, page_no=page_no) -> None:
            if not points:
                return
            box = _bbox(points)
            if clip is not None:
                box = [max(box[0], clip[0]), max(box[1], clip[1]), min(box[2], clip[2]), min(box[3], clip[3])]
                if box[0] > box[2] or box[1] > box[3]:
                    return
            for mcid in marked:
                if mcid is not None:
                    old = boxes.setdefault((page_no, mcid), list(box))
                    old[:] = [min(old[0], box[0]), min(old[1], box[1]), max(old[2], box[2]), max(old[3], box[3])]

        for operands, op in ContentStream(page.get_contents(), reader).operations:
            if op == b"q":
                stack.append((m, clip))
            elif op == b"Q":
                m, clip = stack.pop()
            elif op == b"cm":
                m = _mul([float(v) for v in operands], m)
            elif op == b"BDC":
                p = operands[1] if len(operands) > 1 else {}
                p = p if isinstance(p, dict) else props.get(p, {})
                marked.append(p.get("/MCID") if isinstance(p, dict) else None)
            elif op == b"BMC":
                marked.append(None)
            elif op == b"EMC":
                marked.pop()
            elif op in (b"m", b"l"):
                path.append(_pt(m, float(operands[0]), float(operands[1])))
            elif op in (b"c", b"v", b"y"):
                path += [_pt(m, float(operands[k]), float(operands[k + 1])) for k in range(0, len(operands), 2)]
            elif op == b"re":
                x, y, w, h = (float(v) for v in operands)
                path += [_pt(m, x, y), _pt(m, x + w, y + h)]
            elif op in (b"W", b"W*"):
                if path:
                    b = _bbox(path)
                    clip = b if clip is None else [max(clip[0], b[0]), max(clip[1], b[1]),
                                                   min(clip[2], b[2]), min(clip[3], b[3])]
            elif op in _PAINT:
                add(path, clip)
                path = []
            elif op == b"n":
                path = []
            elif op == b"Do":
                add([_pt(m, x, y) for x in (0, 1) for y in (0, 1)], clip)
    return boxes


def figures(pdf: Path) -> list[Figure]:
    """Every ``/Figure`` of the PDF's structure tree, in document order, with its alt text and drawn box."""
    reader = PdfReader(pdf)
    pages = {p.indirect_reference.idnum: i for i, p in enumerate(reader.pages)}
    drawn = _drawn(reader)
    out: list[Figure] = []

    def marks(k, page: int | None, into: list[tuple[int, int]]) -> None:
        k = k.get_object() if hasattr(k, "get_object") else k
        if isinstance(k, (int, NumberObject)):
            into.append((page, int(k)))
        elif isinstance(k, ArrayObject):
            for c in k:
                marks(c, page, into)
        elif isinstance(k, DictionaryObject):
            page = pages[k.raw_get("/Pg").idnum] if "/Pg" in k else page
            if "/MCID" in k:
                into.append((page, int(k["/MCID"])))
            elif "/K" in k:
                marks(k["/K"], page, into)

    def walk(node, page: int | None) -> None:
        node = node.get_object()
        if isinstance(node, ArrayObject):
            for c in node:
                walk(c, page)
            return
        if not isinstance(node, DictionaryObject):
            return
        page = pages[node.raw_get("/Pg").idnum] if "/Pg" in node else page
        if node.get("/S") == "/Figure":
            found: list[tuple[int, int]] = []
            marks(node.get("/K"), page, found)
            boxes = [(p, drawn[(p, mcid)]) for p, mcid in found if (p, mcid) in drawn]
            if boxes:
                p0 = boxes[0][0]
                box = _bbox([(b[0], b[1]) for _, b in boxes] + [(b[2], b[3]) for _, b in boxes])
                out.append(Figure(str(node.get("/Alt", "")), p0, tuple(box)))
            else:
                out.append(Figure(str(node.get("/Alt", "")), -1, (0.0, 0.0, 0.0, 0.0)))
            return
        if "/K" in node:
            walk(node["/K"], page)

    walk(reader.trailer["/Root"]["/StructTreeRoot"], None)
    return out


def page_width(pdf: Path) -> float:
    return float(PdfReader(pdf).pages[0].mediabox.width)
