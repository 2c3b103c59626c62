"""Path globs of guard rules and rule files, matched in time linear in the path.

A glob became a regular expression before: `*` and `**` turned into `.*`, and a regex with k unbounded `.*` takes
up to n^k steps on a path of n characters that almost matches. One sentence taught to the brain ("never edit
**a**a**a**b") held a web worker's thread, and the GIL with it, for hours. Here the glob is a small automaton whose
set of live states is a bit mask, advanced once per character of the path: a few integer operations a character
whatever the glob.

Semantics are fnmatch's (`*` and `?` match any character, `/` included; `[...]` classes) plus `**/` (no folder or
any folders) and one rule of our own: the glob may start at any folder of the path (`dist/**` matches
`pkg/dist/x`). A glob ending in `/` means everything under that folder.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field
from functools import lru_cache

# Token kinds. LIT, ANY and CLASS consume one character; STAR any run; DIRS nothing or a run ending in "/".
LIT, ANY, CLASS, STAR, DIRS = range(5)
_EPSILON = (STAR, DIRS)


def _class_end(glob: str, i: int) -> int:
    """The index after the `]` closing the class opened at `i`, or -1 when it is not closed (then `[` is literal)."""
    j = i + 1
    if j < len(glob) and glob[j] == "!":
        j += 1
    if j < len(glob) and glob[j] == "]":
        j += 1
    end = glob.find("]", j)
    return -1 if end < 0 else end + 1


def _tokens(glob: str) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = [(DIRS, "")]  # the glob may start at any folder of the path
    i = 0
    while i < len(glob):
        c = glob[i]
        if c == "*":
            j = i
            while j < len(glob) and glob[j] == "*":
                j += 1
            if j - i >= 2 and glob.startswith("/", j):  # `**/`, after any stars of its own
                out += [(STAR, "")] * (j - i > 2) + [(DIRS, "")]
                j += 1
            else:
                out.append((STAR, ""))
            i = j
        elif c == "?":
            out.append((ANY, ""))
            i += 1
        elif c == "[" and (end := _class_end(glob, i)) > 0:
            out.append((CLASS, glob[i:end]))
            i = end
        else:
            out.append((LIT, c))
            i += 1
    return _collapsed(out)


def _collapsed(tokens: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """Adjacent STAR and DIRS merge (`*` then `**/` is `*`; `**/` then `**/` is `**/`), so an epsilon step never
    leads to another one."""
    out: list[tuple[int, str]] = []
    for token in tokens:
        if out and out[-1][0] in _EPSILON and token[0] in _EPSILON:
            out[-1] = (DIRS, "") if out[-1][0] == token[0] == DIRS else (STAR, "")
        else:
            out.append(token)
    return out


@dataclass
class Glob:
    """A compiled glob. State i is "before token i" (bit 2i); a DIRS token also has "inside its folders" (bit 2i+1)."""

    pattern: str
    normal: str = field(init=False)  # the pattern as matched (normal_glob)
    tokens: list[tuple[int, str]] = field(init=False)
    _accept: int = field(init=False, default=0)
    _star: int = field(init=False, default=0)
    _dirs: int = field(init=False, default=0)
    _consumers: dict[str, int] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        self.normal = normal_glob(self.pattern)
        self.tokens = _tokens(self.normal)
        for i, (kind, _) in enumerate(self.tokens):
            if kind == STAR:
                self._star |= 1 << (2 * i)
            elif kind == DIRS:
                self._dirs |= 1 << (2 * i)
        self._accept = 1 << (2 * len(self.tokens))

    def _consuming(self, ch: str) -> int:
        """States whose token takes `ch`; cached per character (a path repeats few)."""
        mask = self._consumers.get(ch)
        if mask is None:
            mask = 0
            for i, (kind, text) in enumerate(self.tokens):
                if kind == ANY or (kind == LIT and text == ch) or (kind == CLASS and _class(text).match(ch)):
                    mask |= 1 << (2 * i)
            if len(self._consumers) < 256:  # a path of many distinct characters must not grow it without end
                self._consumers[ch] = mask
        return mask

    def _closure(self, states: int) -> int:
        while True:
            grown = states | ((states & (self._star | self._dirs)) << 2) | ((states & self._dirs) << 1)
            if grown == states:
                return states
            states = grown

    def matches(self, path: str) -> bool:
        inside = self._dirs << 1
        states = self._closure(1)
        for ch in path:
            if not states:
                return False
            moved = ((states & self._consuming(ch)) << 2) | (states & (self._star | inside))
            if ch == "/":
                moved |= (states & inside) << 1
            states = self._closure(moved)
        return bool(states & self._accept)


def normal_glob(glob: str) -> str:
    """The glob as matched: `./` and `/` prefixes dropped (a leading dot of `.github` kept), a folder's `**` added."""
    glob = glob.strip()
    while glob.startswith(("./", "/")):
        glob = glob[1:] if glob.startswith("/") else glob[2:]
    glob = glob or "*"
    return glob + "**" if glob.endswith("/") else glob  # a folder means everything under it


@lru_cache(maxsize=512)
def _class(text: str) -> re.Pattern[str]:
    return re.compile(fnmatch.translate(text))  # one class, matched against one character: no backtracking


@lru_cache(maxsize=4096)
def compiled_glob(pattern: str) -> Glob:
    """The glob compiled once per process (rules and rule files repeat the same few)."""
    return Glob(pattern)
