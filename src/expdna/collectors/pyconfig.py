"""The constants of a Python config file (nanoGPT's ``config/train_gpt2.py``), never run.

nanoGPT's configurator ``exec``\\ s such a file; expdna reads it as data: each top-level
``name = value`` whose value is a literal (numbers, strings, ``True``/``False``/``None``,
lists, tuples, dicts) or arithmetic over literals (``5 * 8``) is a value. Anything else
(``wandb_run_name = 'ft-' + str(time.time())``, an ``import``) is named in ``skipped``:
knowing it would mean running the file. The file is tokenized, not parsed into an AST:
CPython before 3.11.8 shares one AST recursion counter between threads (gh-106905), and
collectors run in threads.
"""

from __future__ import annotations

import io
import operator
import re
import tokenize
from collections.abc import Callable, Iterator
from typing import Any

_NAMES: dict[str, Any] = {"True": True, "False": False, "None": None}
_BINARY: dict[str, tuple[int, Callable[[Any, Any], Any]]] = {
    "+": (1, operator.add),
    "-": (1, operator.sub),
    "*": (2, operator.mul),
    "/": (2, operator.truediv),
    "//": (2, operator.floordiv),
    "%": (2, operator.mod),
}
_POWER = 4
_CLOSING = {"(": ")", "[": "]", "{": "}"}
_STRING_PREFIX = re.compile(r"^([A-Za-z]*)('''|\"\"\"|'|\")", re.DOTALL)
#: Results bigger than this are not literals worth keeping (``'x' * 10**9``).
_MAX_RESULT_CHARS = 10_000


class NotLiteral(ValueError):
    """The expression is not a literal (or arithmetic over literals)."""


def _string(text: str) -> str:
    m = _STRING_PREFIX.match(text)
    if m is None:
        raise NotLiteral(text)
    prefix, quote = m.group(1).lower(), m.group(2)
    if "f" in prefix or "b" in prefix:
        raise NotLiteral(text)  # an f-string runs code; bytes are not config values
    body = text[len(m.group(0)) : -len(quote)]
    if "r" in prefix:
        return body
    # Python's escapes; characters outside Latin-1 survive as \\u escapes decoded back.
    return body.encode("latin-1", "backslashreplace").decode("unicode_escape")


class _Parser:
    def __init__(self, tokens: list[tokenize.TokenInfo]) -> None:
        self.tokens = [t for t in tokens if t.type not in (tokenize.NL, tokenize.COMMENT)]
        self.i = 0

    def peek(self) -> tokenize.TokenInfo | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def take(self) -> tokenize.TokenInfo:
        token = self.peek()
        if token is None:
            raise NotLiteral("unexpected end")
        self.i += 1
        return token

    def expect(self, text: str) -> None:
        if self.take().string != text:
            raise NotLiteral(f"expected {text}")

    def expression(self, min_rank: int = 0) -> Any:
        left = self.unary()
        while True:
            token = self.peek()
            if token is None or token.type != tokenize.OP or token.string not in _BINARY:
                return left
            rank, op = _BINARY[token.string]
            if rank < min_rank:
                return left
            self.take()
            left = _checked(op, left, self.expression(rank + 1))

    def unary(self) -> Any:
        token = self.peek()
        if token is not None and token.type == tokenize.OP and token.string in ("-", "+"):
            self.take()
            value = self.unary()
            if not isinstance(value, (int, float)) or isinstance(value, bool):
                raise NotLiteral("sign of a non-number")
            return -value if token.string == "-" else value
        return self.power()

    def power(self) -> Any:
        base = self.atom()
        token = self.peek()
        if token is not None and token.string == "**":
            self.take()
            exponent = self.unary()
            if not isinstance(exponent, int) or abs(exponent) > 64:
                raise NotLiteral("exponent")
            return _checked(operator.pow, base, exponent)
        return base

    def atom(self) -> Any:
        token = self.take()
        if token.type == tokenize.NUMBER:
            return _number(token.string)
        if token.type == tokenize.STRING:
            text = _string(token.string)
            while (nxt := self.peek()) is not None and nxt.type == tokenize.STRING:
                text += _string(self.take().string)  # implicit concatenation
            return text
        if token.type == tokenize.NAME and token.string in _NAMES:
            return _NAMES[token.string]
        if token.type == tokenize.OP and token.string in _CLOSING:
            return self.container(token.string)
        raise NotLiteral(token.string)

    def container(self, opening: str) -> Any:
        closing = _CLOSING[opening]
        items: list[Any] = []
        pairs: dict[Any, Any] = {}
        comma = False
        while (token := self.peek()) is not None and token.string != closing:
            value = self.expression()
            if opening == "{":
                self.expect(":")
                if not isinstance(value, (str, int, float, bool)) and value is not None:
                    raise NotLiteral("dict key")
                pairs[value] = self.expression()
            else:
                items.append(value)
            token = self.peek()
            if token is not None and token.string == ",":
                self.take()
                comma = True
            elif token is None or token.string != closing:
                raise NotLiteral("expected , or closing bracket")
        self.expect(closing)
        if opening == "{":
            return pairs
        if opening == "(" and len(items) == 1 and not comma:
            return items[0]  # parentheses around one value, not a tuple
        return items  # tuples as lists: JSON has no tuple


def _number(text: str) -> int | float:
    cleaned = text.replace("_", "")
    if cleaned[-1:] in ("j", "J"):
        raise NotLiteral("complex")
    try:
        return int(cleaned, 0)
    except ValueError:
        try:
            return float(cleaned)
        except ValueError:
            raise NotLiteral(text) from None


def _checked(op: Callable[[Any, Any], Any], left: Any, right: Any) -> Any:
    for value in (left, right):
        if isinstance(value, bool) or not isinstance(value, (int, float, str, list)):
            raise NotLiteral("operand")
    try:
        result = op(left, right)
    except (TypeError, ValueError, ZeroDivisionError, OverflowError) as exc:
        raise NotLiteral(str(exc)) from None
    if isinstance(result, (str, list)) and len(result) > _MAX_RESULT_CHARS:
        raise NotLiteral("result too large")
    if isinstance(result, int) and result.bit_length() > 256:
        raise NotLiteral("result too large")
    return result


def _statements(text: str) -> Iterator[list[tokenize.TokenInfo]]:
    """Top-level logical lines as token lists (indented blocks are skipped whole)."""
    depth = 0
    line: list[tokenize.TokenInfo] = []
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type == tokenize.INDENT:
            depth += 1
        elif token.type == tokenize.DEDENT:
            depth -= 1
        elif token.type in (tokenize.NEWLINE, tokenize.ENDMARKER):
            if depth == 0 and line:
                yield line
            line = []
        elif depth == 0 and token.type not in (tokenize.COMMENT, tokenize.NL):
            line.append(token)


def read_python_config(text: str) -> tuple[dict[str, Any], list[str]]:
    """(literal values by name, names assigned something that is not a literal).

    Raises ``SyntaxError`` (``tokenize.TokenError``, ``IndentationError``) for text that
    is not Python.
    """
    values: dict[str, Any] = {}
    skipped: list[str] = []
    for line in _statements(text):
        if len(line) < 3 or line[0].type != tokenize.NAME or line[1].string != "=":
            continue  # imports, calls, `a = b = 1`, annotated names: not config constants
        name = line[0].string
        parser = _Parser(line[2:])
        try:
            value = parser.expression()
            if parser.peek() is not None:
                raise NotLiteral("trailing tokens")
        except (NotLiteral, RecursionError):
            values.pop(name, None)
            if name not in skipped:
                skipped.append(name)
            continue
        values[name] = value
        if name in skipped:
            skipped.remove(name)
    return values, skipped
