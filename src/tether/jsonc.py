"""``json.dumps`` and ``json.loads`` for the options tether uses, run on ``_json`` (json's C parts) without json's
Python modules.

``json`` imports ``json.decoder`` and ``json.scanner``, which import ``re`` (with ``re._compiler``, ``re._parser``,
``re._constants``), and ``json.encoder``: ~9-10 M instructions of a cold hook call (benchmarks/hook_modules.py)
whose encoding and decoding are done by ``_json`` anyway. What ``json.dumps`` and ``json.loads`` run around the C
encoder and scanner is a few lines, repeated here: the same C functions are called with the same arguments, so the
text is json's byte for byte (it is the event chain's input) and the same inputs are refused with the same errors
(``tests/test_jsonc.py`` holds both to json's answers, errors included). ``json.JSONDecodeError`` is imported on
the error path only (``_json``'s scanner imports ``json.decoder`` itself when it raises one).

Not here: ``indent`` (json runs its Python encoder for it), ``cls``, ``object_hook``, ``parse_int``,
``parse_float``, ``skipkeys`` and ``check_circular=False``; off the cold path tether uses ``json`` itself. ``_json``
is CPython's (as ``_sqlite3`` and ``_thread``, which tether imports as well).
"""

from __future__ import annotations

from _json import encode_basestring, encode_basestring_ascii, make_encoder, make_scanner

TYPE_CHECKING = False  # not typing's: a cold hook call does not import typing (tether/typeless.py)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = ["dumps", "encode_basestring", "encode_basestring_ascii", "loads", "make_encoder", "not_serializable"]

#: What ``str.lstrip`` takes off where json's decoder skips whitespace (``json.decoder.WHITESPACE``,
#: ``[ \t\n\r]*``).
WHITESPACE = " \t\n\r"


def not_serializable(o: object) -> Any:
    """``json.JSONEncoder.default``: what the C encoder calls for a value it cannot encode."""
    raise TypeError(f"Object of type {o.__class__.__name__} is not JSON serializable")


def dumps(
    obj: Any,
    *,
    ensure_ascii: bool = True,
    allow_nan: bool = True,
    separators: tuple[str, str] | None = None,
    default: Callable[[Any], Any] | None = None,
    sort_keys: bool = False,
) -> str:
    """``json.dumps(obj, **options)``: ``JSONEncoder(**options).encode(obj)`` with the C encoder it builds for a
    call without ``indent`` (a fresh ``markers`` dict, so a cycle is json's ``ValueError``)."""
    encoder = encode_basestring_ascii if ensure_ascii else encode_basestring
    if isinstance(obj, str):  # encode()'s own shortcut
        return encoder(obj)
    item, key = separators if separators is not None else (", ", ": ")
    run = make_encoder({}, default or not_serializable, encoder, None, key, item, sort_keys, False, allow_nan)
    return _encode(run, obj)


def _encode(run: Callable[[Any, int], Any], obj: Any) -> str:
    """``JSONEncoder.encode``'s join, one frame below :func:`dumps` as it is below ``json.dumps``, with
    :func:`_iterencode` one more: the C encoder counts its nesting against the same recursion limit as Python's
    frames, so the depth at which a value is ``RecursionError`` is json's."""
    return "".join(_iterencode(run, obj))


def _iterencode(run: Callable[[Any, int], Any], obj: Any) -> Any:
    return run(obj, 0)


class _Context:
    """What ``_json.make_scanner`` reads from a ``json.JSONDecoder``: its six attributes, json's defaults but the
    two hooks tether passes."""

    __slots__ = ("object_hook", "object_pairs_hook", "parse_constant", "parse_float", "parse_int", "strict")

    def __init__(self, object_pairs_hook: Callable[..., Any] | None, parse_constant: Callable[[str], Any]) -> None:
        self.strict = True
        self.object_hook = None
        self.object_pairs_hook = object_pairs_hook
        self.parse_float = float
        self.parse_int = int
        self.parse_constant = parse_constant


#: ``json.decoder._CONSTANTS``: what json reads ``NaN``, ``Infinity`` and ``-Infinity`` as by default.
_CONSTANTS = {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}
#: One C scanner for each pair of hooks a call passes (json builds a decoder, and a scanner, for each such call; the
#: scanner keeps no state between calls: it clears its memo of keys after each).
_SCANNERS: dict[tuple[object, object], Callable[[str, int], tuple[Any, int]]] = {}


def _scanner(object_pairs_hook: Callable[..., Any] | None, parse_constant: Callable[[str], Any] | None) -> Any:
    key = (object_pairs_hook, parse_constant)
    scan = _SCANNERS.get(key)
    if scan is None:
        scan = make_scanner(_Context(object_pairs_hook, parse_constant or _CONSTANTS.__getitem__))  # type: ignore[arg-type]
        if len(_SCANNERS) < 8:  # tether's hooks are module functions; a caller's fresh closures are not kept
            _SCANNERS[key] = scan
    return scan


def _error(message: str, text: str, pos: int) -> ValueError:
    from json import JSONDecodeError  # the error path only

    return JSONDecodeError(message, text, pos)


def _skip(text: str, pos: int) -> int:
    """Where the whitespace from ``pos`` ends: ``json.decoder.WHITESPACE.match(text, pos).end()``."""
    rest = text[pos:] if pos else text
    return len(text) - len(rest.lstrip(WHITESPACE))


def loads(
    s: str | bytes | bytearray,
    *,
    object_pairs_hook: Callable[[list[tuple[str, Any]]], Any] | None = None,
    parse_constant: Callable[[str], Any] | None = None,
) -> Any:
    """``json.loads(s, **hooks)``: bytes decoded as json detects their encoding, a byte order mark in a string
    refused, whitespace around the one value skipped and anything after it refused, the value read by the C
    scanner ``json.JSONDecoder`` builds."""
    if isinstance(s, str):
        if s.startswith("\ufeff"):
            raise _error("Unexpected UTF-8 BOM (decode using utf-8-sig)", s, 0)
    elif isinstance(s, (bytes, bytearray)):
        s = s.decode(detect_encoding(s), "surrogatepass")
    else:
        raise TypeError(f"the JSON object must be str, bytes or bytearray, not {s.__class__.__name__}")
    return _decode(_scanner(object_pairs_hook, parse_constant), s)


def _decode(scan: Callable[[str, int], tuple[Any, int]], s: str) -> Any:
    """``JSONDecoder.decode``, one frame below :func:`loads` as it is below ``json.loads``, with
    :func:`_raw_decode` one more (see :func:`_encode`: the nesting at which a text is ``RecursionError`` is json's)."""
    obj, end = _raw_decode(scan, s, _skip(s, 0))
    end = _skip(s, end)
    if end != len(s):
        raise _error("Extra data", s, end)
    return obj


def _raw_decode(scan: Callable[[str, int], tuple[Any, int]], s: str, idx: int) -> tuple[Any, int]:
    try:
        return scan(s, idx)
    except StopIteration as err:
        raise _error("Expecting value", s, err.value) from None


def detect_encoding(b: bytes | bytearray) -> str:
    """``json.detect_encoding``: the encoding of JSON bytes, from a byte order mark or the zeros among the first
    four bytes (JSON text begins with an ASCII character)."""
    if b.startswith((b"\x00\x00\xfe\xff", b"\xff\xfe\x00\x00")):
        return "utf-32"
    if b.startswith((b"\xfe\xff", b"\xff\xfe")):
        return "utf-16"
    if b.startswith(b"\xef\xbb\xbf"):
        return "utf-8-sig"
    if len(b) >= 4:
        if not b[0]:
            return "utf-16-be" if b[1] else "utf-32-be"
        if not b[1]:
            return "utf-16-le" if b[2] or b[3] else "utf-32-le"
    elif len(b) == 2:
        if not b[0]:
            return "utf-16-be"
        if not b[1]:
            return "utf-16-le"
    return "utf-8"
