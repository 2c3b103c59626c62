"""Exact token counts with the embedding model's own tokenizer (MiniLM's WordPiece, shipped in
`knowledge/assets`), for packs whose `tokenCount` must be a real count rather than a character estimate."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from knowledge.embeddings import ASSETS

_lock = threading.Lock()
# Counts of texts seen before: a project's rules come back in pack after pack, and the tokenizer takes about a
# microsecond a token (a 1,200-token pack's lines 1.8 ms one by one; docs/benchmarks.md, twentieth pass).
_MEMO_SIZE = 4096
_memo: OrderedDict[str, int] = OrderedDict()


@lru_cache(maxsize=1)
def _tokenizer() -> Any:
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(ASSETS / "minilm_tokenizer.json"))
    tok.no_truncation()
    tok.no_padding()
    return tok


def token_count(text: str) -> int:
    """Tokens of `text` without the model's [CLS]/[SEP] wrappers; 0 for an empty text."""
    if not text:
        return 0
    with _lock:  # the shared Tokenizer's settings are not to be changed concurrently
        return len(_tokenizer().encode(text, add_special_tokens=False).ids)


def token_counts(texts: Sequence[str]) -> list[int]:
    """`token_count` of each text: those not counted recently in one call of the tokenizer, the others from a
    small memo. WordPiece splits on whitespace first, so texts joined by newlines count the sum of their counts."""
    with _lock:
        missing = list(dict.fromkeys(t for t in texts if t and t not in _memo))
        if missing:
            encoded = _tokenizer().encode_batch(missing, add_special_tokens=False)
            _memo.update((text, len(e.ids)) for text, e in zip(missing, encoded, strict=True))
        counts = [_memo[t] if t else 0 for t in texts]
        for text in texts:
            if text:
                _memo.move_to_end(text)
        while len(_memo) > _MEMO_SIZE:
            _memo.popitem(last=False)
    return counts
