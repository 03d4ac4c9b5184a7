"""tformer.Stream: a continual model (docs/continual.md) on a stream, a step at a time, as `tformer stream`."""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Union

import numpy as np

from ._tformer import InputError, StreamHandle


class Stream:
    """A continual model in step mode, its state cached between calls (``Model.stream()`` makes one).

    Each step is a feature vector (d_model floats) or, for a model of tokens, a token id (or text,
    encoded by the folder's tokenizer). Once ``window`` steps were seen each step gives an output:
    the encoder's vector (d_model), or with a classifier head its logits (one per label), equal to
    the regular network on the last ``window`` steps. Attributes: ``d_model``, ``window``,
    ``vocab_size`` (0: vectors), ``labels`` (a classifier's label names, else None), ``steps``
    (taken so far). The GIL is released while it steps; one call at a time per stream.
    """

    def __init__(self, path: str, window: Optional[int] = None) -> None:
        """Loads the continual model folder ``path`` (``window`` replaces its config's)."""
        if window is not None and (not isinstance(window, int) or isinstance(window, bool) or window < 1):
            raise InputError(f"stream(): window must be a positive int, got {window!r}")
        self._h = StreamHandle(path, -1 if window is None else window)
        self.path = path
        info = self._h.info()
        self.d_model: int = info["d_model"]
        self.window: int = info["window"]
        self.vocab_size: int = info["vocab_size"]
        self.labels: Optional[List[str]] = info["labels"]
        self._tokenizer: Any = None

    @property
    def steps(self) -> int:
        """Steps taken so far."""
        return self._h.info()["steps"]

    def ids(self, text: str) -> List[int]:
        """A model of tokens: text's ids, from the folder's tokenizer (as ``tformer stream`` reads a line; it
        puts a space after each line, as the text ran in training)."""
        if not self.vocab_size:
            raise InputError("stream(): this model reads feature vectors, not text")
        if self._tokenizer is None:
            from ._tok import Tokenizer
            self._tokenizer = Tokenizer.load(self.path)
        return self._tokenizer.encode(text)

    def feed(self, step_inputs: Union[str, np.ndarray, List[Any]]) -> np.ndarray:
        """Steps the stream through ``step_inputs`` and returns the outputs of the steps that completed a
        window: (k, d_model) float32, or (k, labels) logits with a classifier (k: 0 until the window fills).

        ``step_inputs``: for a model of vectors, (n, d_model) floats or one (d_model,) step; for a model of
        tokens, ids (n,) or a str (encoded with :meth:`ids`). A wrong dtype or shape raises naming it.
        """
        if isinstance(step_inputs, str):
            x = np.asarray(self.ids(step_inputs), dtype=np.int32)
        elif self.vocab_size:
            a = np.asarray(step_inputs)
            if a.ndim != 1 or (a.size and a.dtype.kind not in "iu"):
                raise InputError(f"stream(): a model of tokens takes ids (n,) of ints or a str, got {a.dtype} "
                                 f"{a.shape}")
            if a.size and (a.min() < 0 or a.max() >= self.vocab_size):
                bad = int(np.argmax((a < 0) | (a >= self.vocab_size)))
                raise InputError(f"stream(): ids[{bad}] = {a[bad]} is outside the vocabulary (0..{self.vocab_size - 1})")
            x = np.ascontiguousarray(a, dtype=np.int32)
        else:
            a = np.asarray(step_inputs)
            if a.dtype.kind not in "fiu":
                raise InputError(f"stream(): steps are numbers, got {a.dtype}")
            if a.ndim == 1:
                a = a[None, :]
            if a.ndim != 2 or a.shape[1] != self.d_model:
                raise InputError(f"stream(): steps must be (n, {self.d_model}) (d_model values a step), got {a.shape}")
            x = np.ascontiguousarray(a, dtype=np.float32)
        return np.asarray(self._h.feed(x))

    def classify(self, logits: np.ndarray) -> List[Dict[str, Any]]:
        """A classifier's outputs as {"label", "score"} per row (the likeliest label and its softmax
        probability, as ``tformer stream`` prints them)."""
        if self.labels is None:
            raise InputError("classify(): this stream's model has no classifier head")
        z = np.asarray(logits, dtype=np.float64)
        out = []
        for row in np.atleast_2d(z) if z.size else []:
            best = int(np.argmax(row))
            out.append({"label": self.labels[best], "score": float(1.0 / np.exp(row - row[best]).sum())})
        return out
