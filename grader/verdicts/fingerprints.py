"""Fingerprints of Python code that survive renaming, new comments, new layout and small edits.

This is the method of MOSS (Schleimer, Wilkerson and Aiken, "Winnowing: local
algorithms for document fingerprinting", SIGMOD 2003), on Python tokens:

1. :func:`normalised_tokens`: the source is tokenised; comments, blank lines,
   indentation, ``;`` and statements that are only a string (docstrings) are
   dropped; every identifier becomes ``V`` (keywords stay, and so do names
   after a dot, such as ``cuda.threadIdx.x`` or ``out.shape``: they belong to
   the libraries, which a copier does not rename); every number becomes ``N``
   and every string ``S``.
2. :func:`kgram_hashes`: each run of :data:`K` consecutive tokens is hashed.
3. :func:`fingerprints`: of every :data:`WINDOW` consecutive hashes the
   smallest is kept (winnowing), so two texts that share a run of at least
   ``K + WINDOW - 1`` tokens share at least one fingerprint, wherever the run
   is, and the fingerprints kept depend only on the text around them.
4. :func:`similarity`: the share of the smaller set of fingerprints found in
   the other, so that a copy padded with statements of its own still shows.

A renamed copy has exactly the fingerprints of its original; an inserted no-op
statement or a swap of two statements changes only the k-grams that cross
the spots edited, so most fingerprints stay. Only the standard library is used.
"""

from __future__ import annotations

import ast
import hashlib
import io
import keyword
import tokenize
from collections.abc import Iterable
from dataclasses import dataclass

#: Tokens per k-gram. A run of 8 normalised tokens is about one short
#: statement (``V = V . grid ( N )``). Measured on the course's model answers
#: and the assignments' solutions (tests/grader/verdicts/test_fingerprints.py
#: keeps these measurements true): with 7 an honest solution shares up to 53 %
#: with a course function, as common runs (``V [ V ] = V``) start to count;
#: with 9 or more a copy with a no-op call after every second statement falls
#: to 68 %, close to the threshold, since each edit breaks every k-gram across it.
K = 8
#: Hashes per winnowing window. Every run of ``K + WINDOW - 1`` = 11 shared
#: tokens is guaranteed to be found, and about 2 / (WINDOW + 1) = 40 % of the
#: k-grams are kept: the answers are short (a kernel is 50 to 150 tokens), so a
#: wider window would leave too few fingerprints for a share to mean much.
WINDOW = 4
#: The similarity from which two pieces of code are reported as copies. Edited
#: copies of the model answers (renamed, two statements swapped, no-op calls
#: after every second statement) keep 67 % or more of their bodies' fingerprints,
#: the assignments' honest solutions share at most 50 % with any course function.
THRESHOLD = 0.6
#: Code with fewer fingerprints (about 20 tokens, two short statements) is too
#: short to tell copying from solving.
MIN_FINGERPRINTS = 8

_DROPPED = {
    tokenize.COMMENT,
    tokenize.NL,
    tokenize.NEWLINE,
    tokenize.INDENT,
    tokenize.DEDENT,
    tokenize.ENCODING,
    tokenize.ENDMARKER,
}


@dataclass(frozen=True)
class Token:
    """One normalised token and the lines (1-based) of the source it came from."""

    text: str
    first_line: int
    last_line: int


@dataclass(frozen=True)
class Fingerprint:
    """A selected k-gram hash and the source lines its k tokens span."""

    hash: int
    first_line: int
    last_line: int


def _raw_tokens(source: str) -> list[tokenize.TokenInfo]:
    """The tokens of *source*; code that does not tokenise to its end keeps those before the error.

    Notebook magics (``%timeit``, ``!pip``) are blanked first: they are not Python.
    """
    lines = [
        "" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines(True)
    ]
    found: list[tokenize.TokenInfo] = []
    try:
        found.extend(tokenize.generate_tokens(io.StringIO("".join(lines)).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    return found


def _is_inert(statement: ast.stmt, read: set[str]) -> bool:
    """Whether *statement* does nothing: ``pass``, a lone constant or name, or an unread store.

    A store counts only when its value is a constant or a name (a call could do
    something) and no target is ever read in the source.
    """
    if isinstance(statement, ast.Pass):
        return True
    if isinstance(statement, ast.Expr):
        return isinstance(statement.value, ast.Constant | ast.Name)
    if isinstance(statement, ast.Assign | ast.AnnAssign) and isinstance(
        statement.value, ast.Constant | ast.Name
    ):
        targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
        return all(isinstance(t, ast.Name) and t.id not in read for t in targets)
    return False


def inert_lines(source: str) -> set[int]:
    """The lines of statements that do nothing (see :func:`_is_inert`), so padding is ignored.

    Source that does not parse (a notebook cell with an error) has none. A
    docstring is such a statement too.
    """
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return set()
    read = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    read |= {
        name for n in ast.walk(tree) if isinstance(n, ast.Global | ast.Nonlocal) for name in n.names
    }
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt) and _is_inert(node, read):
            lines.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return lines


def _statements(tokens: list[tokenize.TokenInfo]) -> Iterable[list[tokenize.TokenInfo]]:
    """The tokens grouped by logical line (what ends in NEWLINE), layout tokens left in."""
    line: list[tokenize.TokenInfo] = []
    for token in tokens:
        line.append(token)
        if token.type == tokenize.NEWLINE or (token.type == tokenize.OP and token.string == ";"):
            yield line
            line = []
    if line:
        yield line


def _normal(token: tokenize.TokenInfo, previous: str) -> str:
    if token.type == tokenize.NAME:
        if keyword.iskeyword(token.string) or previous == ".":
            return token.string
        return "V"
    if token.type == tokenize.NUMBER:
        return "N"
    if token.type == tokenize.STRING:
        return "S"
    return token.string


def normalised_tokens(source: str) -> list[Token]:
    """The tokens of *source* with names, literals, comments, docstrings and layout normalised."""
    result: list[Token] = []
    inert = inert_lines(source)
    for statement in _statements(_raw_tokens(source)):
        kept = [t for t in statement if t.type not in _DROPPED and t.string != ";"]
        if kept and kept[0].start[0] in inert:
            continue
        if not kept or all(t.type == tokenize.STRING for t in kept):
            continue  # layout only, or a docstring (a string on its own does nothing)
        for token in kept:
            previous = result[-1].text if result else ""
            text = _normal(token, previous)
            if text == "S" and previous == "S":
                continue  # "a" "b" is one string
            result.append(Token(text, token.start[0], token.end[0]))
    return result


def _hash(texts: Iterable[str]) -> int:
    digest = hashlib.blake2b(" ".join(texts).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def kgram_hashes(source: str) -> list[Fingerprint]:
    """Every k-gram of *source*'s normalised tokens, hashed, in order (none if it is shorter)."""
    tokens = normalised_tokens(source)
    return [
        Fingerprint(
            _hash(t.text for t in tokens[i : i + K]),
            tokens[i].first_line,
            tokens[i + K - 1].last_line,
        )
        for i in range(len(tokens) - K + 1)
    ]


def winnow(grams: list[Fingerprint], window: int) -> list[Fingerprint]:
    """The smallest hash of every *window* consecutive k-grams (the rightmost of equal ones).

    A text shorter than one window keeps its smallest hash, so short code still
    has a fingerprint.
    """
    if not grams:
        return []
    chosen: dict[int, Fingerprint] = {}
    for start in range(max(1, len(grams) - window + 1)):
        part = grams[start : start + window]
        best = min(range(len(part)), key=lambda i: (part[i].hash, -i))
        chosen[start + best] = part[best]
    return [chosen[i] for i in sorted(chosen)]


def fingerprints(source: str) -> list[Fingerprint]:
    """The winnowed fingerprints of *source*, in order of position."""
    return winnow(kgram_hashes(source), WINDOW)


def hashes(marks: Iterable[Fingerprint]) -> frozenset[int]:
    """The set of hashes of some fingerprints."""
    return frozenset(mark.hash for mark in marks)


def similarity(first: frozenset[int], second: frozenset[int]) -> float:
    """The share of the smaller set found in the other: 1.0 when one holds all of the other.

    Measured on the smaller set so that a copy with code of its own added (or
    a copy of part of a longer text) scores as high as a plain copy. Empty
    sets share nothing (0.0).
    """
    smaller = min(len(first), len(second))
    return len(first & second) / smaller if smaller else 0.0


def line_ranges(marks: Iterable[Fingerprint], wanted: frozenset[int]) -> list[tuple[int, int]]:
    """The source lines covered by the fingerprints whose hash is *wanted*, merged, sorted."""
    spans = sorted((m.first_line, m.last_line) for m in marks if m.hash in wanted)
    merged: list[tuple[int, int]] = []
    for first, last in spans:
        if merged and first <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], last))
        else:
            merged.append((first, last))
    return merged
