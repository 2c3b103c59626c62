"""Exact token counts with the embedding model's own tokenizer (MiniLM's WordPiece, shipped in
`knowledge/assets`), for packs whose `tokenCount` must be a real count rather than a character estimate."""

from __future__ import annotations

import threading
from functools import lru_cache
from typing import Any

from knowledge.embeddings import ASSETS

_lock = threading.Lock()


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
