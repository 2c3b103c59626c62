"""`command_regex` guard patterns, compiled with RE2 (the `google-re2` package).

Python's `re` backtracks: `^(a+)+$` against a few thousand characters runs for hours, holding the GIL, and
the guard runs every rule of a scope before each risky command. RE2 matches in time linear in the command
and refuses the constructs that need backtracking (backreferences, lookaround, possessive quantifiers,
atomic groups), so no stored pattern can stall a check.

Patterns were Python syntax before. Where both engines accept a pattern but read it differently, it is
rewritten so it keeps matching what it matched (`_python_meaning`): `\\d` and `\\w` are Unicode classes in
Python and ASCII ones in RE2, and `a{,3}` is a repeat in Python and literal text in RE2. `\\s` needs no
rewrite: commands are whitespace-normalized (single spaces) before matching. `\\b` stays RE2's ASCII word
boundary, which RE2 cannot express otherwise (the one difference left: a non-ASCII letter or digit next to it).
"""

from __future__ import annotations

import re
from typing import Protocol

import re2

from brain.errors import ValidationFailed

RE2_SYNTAX = "https://github.com/google/re2/wiki/Syntax"


class CommandRegex(Protocol):
    def search(self, text: str) -> object | None: ...


def _options() -> re2.Options:
    options = re2.Options()
    options.log_errors = False  # a refused pattern is our error to phrase, not a line on stderr
    options.never_capture = True  # only "does it match" is asked: no groups lets RE2 answer with its DFA
    return options


_OPTIONS = _options()

# Outside brackets / inside brackets. `\W` inside brackets has no RE2 equivalent and stays ASCII.
_UNICODE_CLASSES = {
    "d": (r"\p{Nd}", r"\p{Nd}"),
    "D": (r"\P{Nd}", r"\P{Nd}"),
    "w": (r"[\p{L}\p{N}_]", r"\p{L}\p{N}_"),
    "W": (r"[^\p{L}\p{N}_]", r"\W"),
}
_EMPTY_MIN_REPEAT = re.compile(r"\{,(\d*)\}")


def _python_meaning(pattern: str) -> str:
    """The RE2 pattern that matches what `pattern` matched as a Python regex (see the module docstring)."""
    out: list[str] = []
    i, in_class, class_start = 0, False, 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern):
            escape = pattern[i + 1]
            out.append(_UNICODE_CLASSES[escape][in_class] if escape in _UNICODE_CLASSES else pattern[i:i + 2])
            i += 2
            continue
        if in_class:
            if pattern.startswith("[:", i) and (end := pattern.find(":]", i + 2)) != -1:  # RE2's [:alpha:]
                out.append(pattern[i:end + 2])
                i = end + 2
                continue
            in_class = not (ch == "]" and i > class_start)  # `[]...]` and `[^]...]` start with a literal ]
        elif ch == "[":
            in_class, class_start = True, i + (3 if pattern.startswith("[^", i) else 2) - 1
        elif ch == "{" and (repeat := _EMPTY_MIN_REPEAT.match(pattern, i)):
            out.append("{0," + repeat.group(1) + "}")
            i = repeat.end()
            continue
        out.append(ch)
        i += 1
    return "".join(out)


# What RE2 refuses that Python accepted, by how it is written (only used to name the problem).
_CONSTRUCTS = [
    (re.compile(r"\(\?<[=!]"), "a lookbehind"),
    (re.compile(r"\(\?[=!]"), "a lookahead"),
    (re.compile(r"\\[1-9]|\(\?P="), "a backreference"),
    (re.compile(r"[*+?}]\+"), "a possessive quantifier"),
    (re.compile(r"\(\?>"), "an atomic group"),
]


def _refusal(pattern: str, detail: str) -> str:
    construct = next((name for finder, name in _CONSTRUCTS if finder.search(pattern)), None)
    what = f"it uses {construct}, which RE2 does not support" if construct else "RE2 cannot compile it"
    return (f"pattern `{pattern}` is not valid RE2 syntax ({detail}): {what}. command_regex rules are matched with "
            "RE2, which has no backreferences, lookahead/lookbehind, possessive quantifiers or atomic groups, so that "
            f"no pattern can stall the guard; rewrite it in RE2 syntax ({RE2_SYNTAX})")


def command_regex_compile(pattern: str) -> CommandRegex:
    """The pattern compiled with RE2, matching what it matched as a Python regex; ValidationFailed naming the
    problem when RE2 cannot compile it."""
    try:
        return re2.compile(_python_meaning(pattern), _OPTIONS)
    except re2.error as exc:
        raise ValidationFailed(_refusal(pattern, _reason(pattern, exc))) from None


def _reason(pattern: str, error: re2.error) -> str:
    """RE2's reason, quoting the pattern as written when that fails too (the rewrite only replaces classes)."""
    try:
        re2.compile(pattern, _OPTIONS)
    except re2.error as as_written:
        error = as_written
    raw = error.args[0] if error.args else ""
    return raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
