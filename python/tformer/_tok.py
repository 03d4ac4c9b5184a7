"""tformer.Tokenizer: the library's tokenizers (tformer/tokenizer.h) from Python."""
from __future__ import annotations

import os
from typing import Dict, List, Optional, Sequence, Union

from ._tformer import InputError, TokenizerHandle


def _texts(texts: Union[str, Sequence[str]], what: str) -> tuple:
    """A str or a sequence of str -> a tuple (the C side checks each is a str)."""
    if isinstance(texts, str):
        raise InputError(f"{what}(): texts must be a list of str; encode() takes one str")
    return tuple(texts)


# transformers' clean_up_tokenization, in its order; the tokenizers WordPiece decoder's per-piece cleanup is the
# same without " ' " (a piece has no space in it: only the space before a piece is ever removed).
_CLEAN_UP = ((" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"), (" n't", "n't"), (" 'm", "'m"),
             (" 's", "'s"), (" 've", "'ve"), (" 're", "'re"))
_WORDPIECE_DECODER = tuple(p for p in _CLEAN_UP if p[0] != " ' ")


def _replace_all(text: str, pairs: tuple) -> str:
    """Each (a, b) of pairs replaced in text, in order."""
    for a, b in pairs:
        text = text.replace(a, b)
    return text


class Tokenizer:
    """A tokenizer folder or file, as ``tformer encode`` / ``tformer decode`` read it.

    ``Tokenizer.load(path)`` takes what ``--tokenizer`` takes: a Hugging Face folder (tokenizer.json,
    vocab.txt, vocab.json + merges.txt, a Marian folder's source.spm), a tformer run folder, a
    vocab.txt / tokenizer.json / .spm file, or "char". Attributes: ``kind`` ("char", "bpe",
    "byte-bpe", "wordpiece", "sentencepiece"), ``vocab_size``, ``model_max_length`` (0 when
    unknown), ``special_ids`` (role -> id or None: cls, sep, pad, mask, unk, bos, eos). Encoding
    and decoding release the GIL; one tokenizer may be shared by threads.
    """

    def __init__(self, path: Union[str, os.PathLike]) -> None:
        """Loads the tokenizer at ``path``; see :meth:`load`."""
        self._h = TokenizerHandle(os.fspath(path))
        info = self._h.info()
        self.path: str = os.fspath(path)
        self.kind: str = info["kind"]
        self.vocab_size: int = info["vocab_size"]
        self.model_max_length: int = info["model_max_length"]
        self.special_ids: Dict[str, Optional[int]] = info["special"]

    @classmethod
    def load(cls, path: Union[str, os.PathLike]) -> "Tokenizer":
        """Loads a tokenizer; raises :class:`tformer.Error` with the library's message naming the file."""
        return cls(path)

    def __len__(self) -> int:
        """The vocabulary's size."""
        return self.vocab_size

    def __repr__(self) -> str:
        """Tokenizer('path', kind=..., vocab_size=...)."""
        return f"tformer.Tokenizer({self.path!r}, kind={self.kind!r}, vocab_size={self.vocab_size})"

    def encode_batch(self, texts: Sequence[str], pairs: Optional[Sequence[str]] = None,
                     add_special_tokens: bool = False, max_length: Optional[int] = None) -> List[List[int]]:
        """:meth:`encode` of each text (and pair), the GIL released for the whole batch."""
        ids, _ = self._encode(texts, pairs, add_special_tokens, max_length, "encode_batch")
        return ids

    def _encode(self, texts: Sequence[str], pairs: Optional[Sequence[str]], special: bool,
                max_length: Optional[int], what: str) -> tuple:
        """(ids, type ids) of texts, checked."""
        if max_length is not None and (not isinstance(max_length, int) or isinstance(max_length, bool)
                                       or max_length < 1):
            raise InputError(f"{what}(): max_length must be a positive int, got {max_length!r}")
        if pairs is not None and not special:
            raise InputError(f"{what}(): a pair is encoded with its special tokens (add_special_tokens=True)")
        t = _texts(texts, what)
        p = None if pairs is None else _texts(pairs, what)
        ids, types = self._h.encode(t, p, bool(special), max_length or 0)
        if max_length and not special:
            ids = [x[:max_length] for x in ids]
        return ids, types

    def encode(self, text: str, pair: Optional[str] = None, add_special_tokens: bool = False,
               max_length: Optional[int] = None) -> List[int]:
        """The ids of ``text``, as ``tformer encode`` writes them (no special tokens).

        ``add_special_tokens=True``: the model's inputs, as Hugging Face's tokenizer gives them
        (``tokenizer(text, pair)["input_ids"]``): [CLS] text [SEP] (pair [SEP]) for WordPiece,
        RoBERTa's and XLM-R's layouts for their tokenizer.json, cut longest first to ``max_length``
        ids; a tokenizer without such a layout raises. Without specials, ``max_length`` keeps the
        first ids. Hugging Face's ``encode`` adds the specials by default; this one does not.
        """
        if not isinstance(text, str) or (pair is not None and not isinstance(pair, str)):
            raise InputError("encode(): text (and pair) must be str; encode_batch() takes a list")
        ids, _ = self._encode([text], None if pair is None else [pair], add_special_tokens, max_length, "encode")
        return ids[0]

    def encode_with_types(self, text: str, pair: Optional[str] = None,
                          max_length: Optional[int] = None) -> tuple:
        """(ids, token type ids) with the special tokens: BERT's inputs for a text or a pair."""
        ids, types = self._encode([text], None if pair is None else [pair], True, max_length, "encode_with_types")
        return ids[0], types[0]

    def decode(self, ids: Sequence[int], skip_special_tokens: bool = False,
               clean_up_tokenization_spaces: Optional[bool] = None) -> str:
        """The text of ``ids``, as Hugging Face's ``decode`` gives it; an id outside the vocabulary raises.

        The library's text is ``tformer decode``'s (WordPiece: the pieces joined by spaces, ``##``
        pieces glued to the one before, as the slow ``BertTokenizer``; special tokens kept).
        ``skip_special_tokens=True`` drops the special tokens' ids first (:attr:`special_ids`: [CLS],
        [SEP], [PAD], [MASK], [UNK], <s>, ...). A WordPiece text then gets what the fast tokenizer's
        decoder does (a piece starting with . , ? ! glued to the one before), and with
        ``clean_up_tokenization_spaces`` (None: True for WordPiece, as transformers 4.x's
        ``BertTokenizerFast``; else False) transformers' ``clean_up_tokenization`` (" ' " and the
        contractions " n't" " 's" " 'm" " 've" " 're" glued too): the text is
        ``BertTokenizerFast.decode(ids, skip_special_tokens, clean_up_tokenization_spaces)``'s.
        """
        if isinstance(ids, (str, bytes)):
            raise InputError("decode(): ids must be a sequence of ints")
        return self.decode_batch([ids], skip_special_tokens, clean_up_tokenization_spaces)[0]

    def decode_batch(self, batch: Sequence[Sequence[int]], skip_special_tokens: bool = False,
                     clean_up_tokenization_spaces: Optional[bool] = None) -> List[str]:
        """:meth:`decode` of each id list (the GIL released for the whole batch)."""
        if skip_special_tokens:
            special = {i for i in self.special_ids.values() if i is not None}
            batch = [[i for i in ids if i not in special] for ids in batch]
        texts = self._h.decode(tuple(batch))
        wordpiece = self.kind == "wordpiece"
        clean = wordpiece if clean_up_tokenization_spaces is None else bool(clean_up_tokenization_spaces)
        if wordpiece:
            texts = [_replace_all(t, _WORDPIECE_DECODER) for t in texts]
        return [_replace_all(t, _CLEAN_UP) for t in texts] if clean else texts

    def token_to_id(self, token: str) -> Optional[int]:
        """The id of a vocabulary entry as the vocabulary file writes it, or None."""
        return self._h.token_id(token)
