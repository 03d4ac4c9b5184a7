"""tformer: a Transformer toolkit in C, from Python.

``tformer.load(path)`` opens any folder tformer reads (Hugging Face folders of the supported
architectures, tformer run folders) and returns a :class:`Model` whose methods are the model's
capabilities: :meth:`Model.embed`, :meth:`Model.classify`, :meth:`Model.run`. Every computation runs
in C with the GIL released; results are numpy arrays over the library's own buffers (no copy).
Errors raise :class:`Error` subclasses carrying the library's message (docs/python.md).
"""
from __future__ import annotations

import codecs
import json
import math
import os
import queue
import re
import sys
import threading
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple, Union

import numpy as np


def _name_mkl() -> None:
    """PyPI's mkl puts libmkl_rt in this environment's lib/, where the library's loader does not
    look: name it (TFORMER_MKL), so that matrix products use it on Intel CPUs as PyTorch's do
    (docs/performance.md). The library tries it only on Intel CPUs; TFORMER_MKL=0 or
    TFORMER_BLAS set by the user win."""
    if "TFORMER_MKL" in os.environ or "TFORMER_BLAS" in os.environ:
        return
    for name in ("libmkl_rt.so.3", "libmkl_rt.so.2"):
        path = os.path.join(sys.prefix, "lib", name)
        if os.path.exists(path):
            os.environ["TFORMER_MKL"] = path
            return


_name_mkl()

from . import _safetensors
from ._tformer import CapabilityError, Error, Handle, InputError, ModelNotFoundError, kernels, set_threads
from ._tformer import top as _tformer_top
from ._tok import Tokenizer
from ._streams import Stream
from ._st import SentenceTransformer
from ._training import train

__all__ = ["load", "Model", "Tokenizer", "SentenceTransformer", "Stream", "train", "Error", "ModelNotFoundError",
           "CapabilityError", "InputError", "set_threads", "kernels"]

_POOLINGS = {"mean": 0, "cls": 1, "max": 2}
_BEAM_STOPS = {"tformer": 0, "hf": 1, "hf-early": 2, "hf-never": 3}


def load(path: Union[str, os.PathLike], threads: Optional[int] = None, precision: str = "f32") -> "Model":
    """Opens the model folder at ``path`` (config.json picks the family).

    ``threads``: the library's thread count (a process-wide setting, as ``--threads``); None leaves
    it as it is (OMP_NUM_THREADS, else every core). ``precision``: "f32" (as trained), "bf16" or
    "int8": the products with the weights, as the CLI's ``--precision`` (docs/precision.md). Raises :class:`ModelNotFoundError` (a
    FileNotFoundError) for a folder without config.json, :class:`Error` for a folder tformer cannot
    read, both with the library's message naming the file.
    """
    return Model(path, threads, precision)


_COLORS = {None: 0, "grayscale": 1, "rgb": 3}  # color= as read_png's colour (the CLI's --grayscale, --rgb)


def _color(color: Optional[str], channels: int, what: str) -> int:
    """color= checked for a model of channels: 0 (the model's), 1 (grey first) or 3."""
    if color not in _COLORS:
        raise InputError(f"{what}(): color must be None, \"rgb\" or \"grayscale\", got {color!r}")
    if color == "rgb" and channels == 1:
        raise InputError(f"{what}(): color=\"rgb\": the model takes grey images (1 channel); give color=\"grayscale\" "
                         "or None")
    return _COLORS[color]


def _as_pixels(img: Any, index: int, channels: int, size: int, what: str = "classify", grey: bool = False) -> np.ndarray:
    """One image (H, W[, C]) uint8 (0..255) or float (0..1) -> float32 (channels, size, size); what: the
    method, for messages; grey: an RGB image made grey first (color="grayscale"), then given the model's channels."""
    a = np.asarray(img)
    if a.dtype == np.uint8:
        a = a.astype(np.float32) / np.float32(255)
    elif a.dtype.kind == "f":
        a = a.astype(np.float32, copy=False)
        if a.size and (not np.all(np.isfinite(a)) or a.min() < 0 or a.max() > 1):
            raise InputError(f"{what}(): images[{index}] holds values outside [0, 1] (float pixels are 0..1)")
    else:
        raise InputError(f"{what}(): images[{index}] is {a.dtype}; images are uint8 or float (H, W[, C]) arrays "
                         "or PNG paths")
    if a.ndim == 2:
        a = a[:, :, None]
    if a.ndim != 3 or a.shape[2] not in (1, 3):
        raise InputError(f"{what}(): images[{index}] has shape {a.shape}; an image is (H, W), (H, W, 1) or (H, W, 3)")
    if a.shape[0] != size or a.shape[1] != size:
        raise InputError(f"{what}(): images[{index}] is {a.shape[1]}x{a.shape[0]}; the model takes {size}x{size} "
                         f"with {channels} channel(s)")
    if (channels == 1 or grey) and a.shape[2] == 3:  # PIL's L, as the PNG reader converts
        a = (a @ np.array([0.299, 0.587, 0.114], dtype=np.float32))[:, :, None]
    if channels == 3 and a.shape[2] == 1:
        a = np.repeat(a, 3, axis=2)
    elif a.shape[2] != channels:
        raise InputError(f"{what}(): images[{index}] has {a.shape[2]} channels; the model takes {channels}")
    return np.ascontiguousarray(a.transpose(2, 0, 1))


class Model:
    """A loaded tformer model: read-only, shareable between threads.

    Attributes: ``family`` (the registry's family name: "bert", "vit", ...), ``capabilities`` (the
    names of what it can do: "run", "embed", "classify-image", ...), ``config`` (config.json as a
    dict), ``model_type``, ``architecture`` (config.json's architectures[0], or None), ``path``.
    Calling a capability the model lacks raises :class:`CapabilityError` with the library's message.
    ``close()`` frees the C memory at once (otherwise freed when the object is collected).
    """

    def __init__(self, path: Union[str, os.PathLike], threads: Optional[int] = None, precision: str = "f32") -> None:
        """Loads the folder; see :func:`load`."""
        if threads is not None and (not isinstance(threads, int) or threads < 1):
            raise InputError(f"load(): threads must be a positive int, got {threads!r}")
        if not isinstance(precision, str):
            raise InputError(f"load(): precision must be f32, bf16 or int8, got {precision!r}")
        self._h = Handle(os.fspath(path), threads or 0, precision)
        info = self._h.info()
        self.family: str = info["family"]
        self.model_type: str = info["model_type"]
        self.architecture: Optional[str] = info["architecture"]
        self.path: str = info["dir"]
        self.capabilities: List[str] = list(info["capabilities"])
        self._config: Optional[Dict[str, Any]] = None

    @property
    def config(self) -> Dict[str, Any]:
        """config.json of the folder, as a dict (read once)."""
        if self._config is None:
            with open(os.path.join(self.path, "config.json"), encoding="utf-8") as f:
                self._config = json.load(f)
        return self._config

    def __repr__(self) -> str:
        """Model('path', family=..., capabilities=[...])."""
        return f"tformer.Model({self.path!r}, family={self.family!r}, capabilities={self.capabilities!r})"

    def close(self) -> None:
        """Frees the model's C memory now; later calls raise :class:`Error`."""
        self._h.close()

    def __enter__(self) -> "Model":
        """``with tformer.load(path) as m:`` closes the model at the end of the block."""
        return self

    def __exit__(self, *exc: Any) -> None:
        """Closes the model."""
        self.close()

    def embed(self, texts: Union[str, Sequence[str]], batch_size: int = 32, normalize: Optional[bool] = True,
              pooling: Optional[str] = None, max_length: Optional[int] = None) -> np.ndarray:
        """Sentence embeddings: an (n, d) float32 array, one row per text (as ``tformer embed``).

        A single str gives one row (shape (1, d)). ``normalize=True`` (the default) L2-normalises each
        row (``tformer embed --normalize``), False leaves the pooled vectors as they are, None takes the
        folder's setting (modules.json's Normalize, as ``tformer embed`` without ``--normalize``).
        ``pooling`` ("mean", "cls" or "max") and ``max_length`` (ids per text with [CLS] and [SEP])
        default to the folder's sentence-transformers settings (1_Pooling/config.json,
        sentence_bert_config.json), else mean pooling, the model's context. ``batch_size``: texts a
        forward pass. The GIL is released while the model runs; the array is the library's buffer,
        freed when the array is.
        """
        if isinstance(texts, str):
            texts = [texts]
        if pooling is not None and pooling not in _POOLINGS:
            raise InputError(f"embed(): pooling must be 'mean', 'cls' or 'max', got {pooling!r}")
        for name, v in (("batch_size", batch_size), ("max_length", max_length)):
            if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 1):
                raise InputError(f"embed(): {name} must be a positive int, got {v!r}")
        norm = -1 if normalize is None else int(bool(normalize))
        buf = self._h.embed(tuple(texts), batch_size, norm, _POOLINGS.get(pooling, -1), max_length or 0)
        return np.asarray(buf)

    def fill_mask(self, text: str, top_k: int = 5) -> List[List[Dict[str, Any]]]:
        """The ``top_k`` likeliest tokens at each mask token of ``text`` ([MASK], or <mask> for RoBERTa).

        Returns a list per mask token, in the text's order, of dicts {"token_id", "token", "score",
        "position"}, likeliest first: the scores are the softmax over the vocabulary, as Hugging
        Face's fill-mask pipeline and ``tformer fill-mask`` give them; ``position`` is the mask's
        index among the text's ids. A text without a mask token raises :class:`InputError`.
        """
        if not isinstance(text, str):
            raise InputError(f"fill_mask(): text must be str, got {type(text).__name__}")
        if not isinstance(top_k, int) or isinstance(top_k, bool) or top_k < 1:
            raise InputError(f"fill_mask(): top_k must be a positive int, got {top_k!r}")
        return [[{"token_id": i, "token": t, "score": p, "position": pos} for pos, i, t, p in row]
                for row in self._h.fill_mask(text, top_k)]

    def _generate_args(self, prompt: str, kw: Dict[str, Any]) -> tuple:
        """generate()'s arguments checked, the library's defaults for those not given (None)."""
        if not isinstance(prompt, str):
            raise InputError(f"generate(): prompt must be str, got {type(prompt).__name__}")
        d = self._h.generate_defaults()
        quantize = kw.pop("quantize", None)
        if quantize not in (None, "none", "int8"):
            raise InputError(f"generate(): quantize must be None, 'none' or 'int8', got {quantize!r}")
        for k, v in kw.items():
            if k == "stop" or v is None:
                continue
            if k in ("max_tokens", "top_k", "beam", "seed") and (not isinstance(v, int) or isinstance(v, bool)):
                raise InputError(f"generate(): {k} must be an int, got {v!r}")
            if k not in ("max_tokens", "top_k", "beam", "seed") and (not isinstance(v, (int, float)) or math.isnan(v)):
                raise InputError(f"generate(): {k} must be a number, got {v!r}")
        a = {k: (d[k] if v is None else v) for k, v in kw.items() if k != "stop"}
        ranges = {"max_tokens": a["max_tokens"] >= 0, "temperature": a["temperature"] >= 0,
                  "top_k": a["top_k"] >= 0, "top_p": 0 < a["top_p"] <= 1, "repetition_penalty": a["repetition_penalty"] > 0,
                  "beam": 0 <= a["beam"] <= 256, "seed": 0 <= a["seed"] < 2**64,
                  "length_penalty": math.isfinite(a["length_penalty"])}
        for k, ok in ranges.items():
            if not ok:
                raise InputError(f"generate(): {k} {kw[k]!r} is out of range (max_tokens >= 0, temperature >= 0, "
                                 "top_k >= 0, 0 < top_p <= 1, repetition_penalty > 0, 0 <= beam <= 256)")
        stop = kw.get("stop")
        if stop is not None and not isinstance(stop, str):
            raise InputError(f"generate(): stop must be str, got {type(stop).__name__}")
        return (prompt, a["max_tokens"], a["temperature"], a["top_k"], a["top_p"], a["repetition_penalty"], a["beam"],
                a["seed"], a["length_penalty"], stop or None), quantize == "int8"

    def generate(self, prompt: str, max_tokens: Optional[int] = None, temperature: Optional[float] = None,
                 top_k: Optional[int] = None, top_p: Optional[float] = None,
                 repetition_penalty: Optional[float] = None, beam: Optional[int] = None, seed: Optional[int] = None,
                 length_penalty: Optional[float] = None, stop: Optional[str] = None,
                 quantize: Optional[str] = None) -> str:
        """The prompt's continuation (the prompt not included), as ``tformer generate`` writes it.

        The settings are ``tformer generate``'s flags; None takes the library's default (100 tokens,
        temperature 1, top_k 0 = all, top_p 1, repetition_penalty 1, beam 0 = sampling, seed 1,
        length_penalty 1). ``temperature=0`` is greedy; ``beam=N`` a beam search of width N. The text
        ends at the model's end token, after ``max_tokens``, or before the first ``stop``. The GIL is
        released while the model runs.

        ``quantize="int8"``: the matrices' int8 copies, as ``tformer generate --precision int8`` (the
        same text, bit for bit); None or "none": the precision load() was given. The copies are made (or dropped)
        when the setting changes, which rewrites the model: a call that changes it while other calls
        run on this model raises :class:`Error`; calls with the setting the model has run together.
        """
        args, quant = self._generate_args(prompt, dict(max_tokens=max_tokens, temperature=temperature, top_k=top_k,
                                                       top_p=top_p, repetition_penalty=repetition_penalty, beam=beam,
                                                       seed=seed, length_penalty=length_penalty, stop=stop,
                                                       quantize=quantize))
        return self._h.generate(*args, None, quant).decode("utf-8", "replace")

    def generate_stream(self, prompt: str, **settings: Any) -> Iterator[str]:
        """:meth:`generate`, yielding the text piece by piece as the tokens come.

        Takes :meth:`generate`'s settings. The model runs in a worker thread (the GIL released);
        closing the iterator early stops the generation at the next token. The pieces joined are
        :meth:`generate`'s text (bytes of a character split between tokens wait for the rest).
        """
        known = ("max_tokens", "temperature", "top_k", "top_p", "repetition_penalty", "beam", "seed",
                 "length_penalty", "stop", "quantize")
        for k in settings:
            if k not in known:
                raise InputError(f"generate_stream(): unknown setting {k!r} (settings: {', '.join(known)})")
        return self._stream(*self._generate_args(prompt, {k: settings.get(k) for k in known}))

    def _stream(self, args: tuple, quant: bool) -> Iterator[str]:
        """generate_stream()'s generator, over arguments already checked."""
        pieces: "queue.Queue[Optional[bytes]]" = queue.Queue()
        closed, failure = threading.Event(), []

        def on_text(piece: bytes) -> bool:
            pieces.put(piece)
            return closed.is_set()

        def work() -> None:
            try:
                self._h.generate(*args, on_text, quant)
            except BaseException as e:  # handed to the consumer
                failure.append(e)
            finally:
                pieces.put(None)

        worker = threading.Thread(target=work, name="tformer-generate", daemon=True)
        worker.start()
        utf8 = codecs.getincrementaldecoder("utf-8")("replace")
        try:
            while (piece := pieces.get()) is not None:
                text = utf8.decode(piece)
                if text:
                    yield text
            text = utf8.decode(b"", final=True)
            if text:
                yield text
        finally:
            closed.set()
            worker.join()
        if failure:
            raise failure[0]

    def translate(self, texts: Union[str, Sequence[str]], beam: Optional[int] = 5,
                  length_penalty: Optional[float] = None, max_len_a: Optional[float] = None,
                  max_len_b: Optional[int] = None, batch_size: Optional[int] = None,
                  beam_stop: Optional[str] = None) -> List[str]:
        """Each text translated, as ``tformer translate`` translates its lines (a str gives a list of one).

        ``beam``: a beam search of width 5 by default (1..64; 1: greedy, ``tformer translate``'s
        ``--beam``). None takes the folder's setting, for the beam too (a Marian folder's generation
        settings, as transformers' generate() reads them; else greedy, at most 1.5 x source + 10
        tokens, batches of 32). ``length_penalty``, ``max_len_a`` / ``max_len_b`` (at most
        a x source ids + b target ids; giving either sets both, the library's default for the
        other), ``batch_size`` (sentences decoded together, 1..1024), ``beam_stop`` ("tformer",
        "hf", "hf-early", "hf-never"): the CLI's flags. The GIL is released while the model runs.
        """
        if isinstance(texts, str):
            texts = [texts]
        checks = [("beam", beam, int, lambda v: 1 <= v <= 64), ("max_len_b", max_len_b, int, lambda v: v >= 0),
                  ("batch_size", batch_size, int, lambda v: 1 <= v <= 1024),
                  ("length_penalty", length_penalty, (int, float), lambda v: -10 <= v <= 10),
                  ("max_len_a", max_len_a, (int, float), lambda v: 0 <= v <= 100)]
        for name, v, kind, ok in checks:
            if v is not None and (not isinstance(v, kind) or isinstance(v, bool) or not ok(v)):
                raise InputError(f"translate(): {name} {v!r} is out of range (beam 1..64, length_penalty -10..10, "
                                 "max_len_a 0..100, max_len_b >= 0, batch_size 1..1024)")
        if beam_stop is not None and beam_stop not in _BEAM_STOPS:
            raise InputError(f"translate(): beam_stop must be one of {', '.join(_BEAM_STOPS)}, got {beam_stop!r}")
        nan = float("nan")
        return self._h.translate(tuple(texts), beam or 0, nan if length_penalty is None else length_penalty,
                                 nan if max_len_a is None else max_len_a, -1 if max_len_b is None else max_len_b,
                                 batch_size or 0, _BEAM_STOPS.get(beam_stop, -1))

    def labels(self) -> List[str]:
        """The classifier's label names (images, texts or clips), in the order of its logits."""
        return self._h.labels()

    def tag(self, texts: Union[str, Sequence[str]]) -> Any:
        """Token classification ("tag": a ``...ForTokenClassification`` folder, ``tformer finetune --task tag``'s):
        per text, its words (split at spaces, tabs and line ends) each with the label of its first piece, as
        ``tformer predict --task tag`` labels a line (the folder's finetune.json ``max_len``, else the model's
        length); a word cut away past it gets None. A str gives one list, a list of str a list of them."""
        single = isinstance(texts, str)
        items = [texts] if single else list(texts)
        words = []
        for i, t in enumerate(items):
            if not isinstance(t, str):
                raise InputError(f"tag(): texts[{i}] is {type(t).__name__}, not str")
            words.append([w for w in re.split(r"[ \t\r\n\v\f]+", t) if w])
        lines = [" ".join(w) for w in words if w]
        ids = self._h.predict("tag", "".join(line + "\n" for line in lines).encode("utf-8")) if lines else []
        names, it, out = self._h.labels(), iter(ids), []
        for w in words:
            tags = next(it) if w else []
            out.append([(word, names[t] if t >= 0 else None) for word, t in zip(w, tags)])
        return out[0] if single else out

    def answer(self, question: Union[str, Sequence[str]], context: Union[str, Sequence[str]]) -> Any:
        """Extractive question answering ("answer": a ``...ForQuestionAnswering`` folder, ``tformer finetune --task
        span``'s): the span of the context that answers the question, {"answer", "start", "end"} with ``start`` and
        ``end`` character offsets in ``context`` (``context[start:end] == answer``), as ``tformer predict --task span``
        finds it (the longest answer finetune.json's ``max_answer`` pieces). Lists of questions and contexts give a
        list; an answer cut away with its context is "" at 0."""
        single = isinstance(question, str)
        qs, cs = ([question], [context]) if single else (list(question), list(context))
        if len(qs) != len(cs) or (single and not isinstance(context, str)):
            raise InputError(f"answer(): {len(qs)} questions and {len(cs)} contexts; give one context a question")
        for i, (q, c) in enumerate(zip(qs, cs)):
            if not isinstance(q, str) or not isinstance(c, str):
                raise InputError(f"answer(): question and context {i} must be str")
        text = "".join(json.dumps({"question": q, "context": c}) + "\n" for q, c in zip(qs, cs))
        spans = self._h.predict("span", text.encode("utf-8")) if qs else []
        out = []
        for c, (off, n) in zip(cs, spans):
            b = c.encode("utf-8")
            start = len(b[:off].decode("utf-8", "replace"))
            answer = b[off:off + n].decode("utf-8", "replace")
            out.append({"answer": answer, "start": start, "end": start + len(answer)})
        return out[0] if single else out

    def image_logits(self, images: Union[np.ndarray, Sequence[Any]], color: Optional[str] = None) -> np.ndarray:
        """The classifier's logits (n, labels) float32 of images (see :meth:`classify`, ``color`` too)."""
        return np.asarray(self._h.image_logits(self._pixels(images, "classify", color)))

    def _pixels(self, images: Any, what: str, color: Optional[str] = None) -> np.ndarray:
        """images (see :meth:`classify`) -> float32 (n, channels, size, size) in [0, 1] for this model."""
        channels, size, _ = self._h.image_shape()
        colour = _color(color, channels, what)
        one = isinstance(images, np.ndarray) and images.ndim == 3 and images.shape[2] in (1, 3) \
            and images.shape[:2] == (size, size)  # one (H, W, C) image rather than n grey ones
        if isinstance(images, np.ndarray) and images.ndim in (3, 4) and not one:
            images = list(images)
        elif isinstance(images, (str, os.PathLike, np.ndarray)):  # one path, (H, W) or (H, W, C)
            images = [images]
        pixels = np.empty((len(images), channels, size, size), dtype=np.float32)
        for i, img in enumerate(images):
            if isinstance(img, (str, os.PathLike)):
                pixels[i] = np.asarray(self._h.read_png(os.fspath(img), colour)).reshape(channels, size, size)
            else:
                pixels[i] = _as_pixels(img, i, channels, size, what, colour == 1)
        return pixels

    def caption(self, images: Union[np.ndarray, Sequence[Any], str, os.PathLike], beam: int = 1,
                max_tokens: Optional[int] = None, attention: bool = False, color: Optional[str] = None) -> List[Any]:
        """A caption per image (a captioner: ``tformer train --arch caption``), as ``tformer caption``.

        ``images`` as :meth:`classify` takes them (arrays (H, W[, C]) uint8 or float in [0, 1], PNG
        paths, an (n, H, W[, C]) array), ``color`` too. ``beam``: 1 greedy, N a beam search of width N (at most 64);
        ``max_tokens``: words at most, the end included (None: the model's context - 1). Returns a
        str per image, or with ``attention=True`` a dict per image: {"text", "words", "attention"}, the
        last a float32 (words + 1, grid, grid) array (each word's attention over the image's grid,
        then the end's) or None for a model that attends to nothing. The GIL is released.
        """
        for name, v, lo, hi in (("beam", beam, 1, 64), ("max_tokens", max_tokens, 1, 1 << 20)):
            if v is not None and (not isinstance(v, int) or isinstance(v, bool) or not lo <= v <= hi):
                raise InputError(f"caption(): {name} must be an int in {lo}..{hi}, got {v!r}")
        self._h.require("caption")
        if isinstance(images, np.ndarray) and images.ndim == 2:
            images = [images]
        out = []
        for text, words, att, grid in self._h.caption(self._pixels(images, "caption", color), beam, max_tokens or 0):
            if not attention:
                out.append(text)
                continue
            maps = None if att is None else np.asarray(att).reshape(len(words) + 1, grid, grid)
            out.append({"text": text, "words": words, "attention": maps})
        return out

    def complete_image(self, image: np.ndarray, keep_rows: int, samples: int = 4, temperature: float = 1.0,
                       top_k: int = 0, top_p: float = 1.0, seed: int = 0) -> np.ndarray:
        """The image's top ``keep_rows`` rows kept and the rest sampled, ``samples`` times (an ImageGPT:
        ``tformer train --arch imagegpt``), as ``tformer complete-image`` draws them: completion i with
        ``seed + i``; temperature 0 is greedy. ``image``: an (H, W[, C]) array, uint8 or float in [0, 1], of
        the model's size. Returns float32 (samples, H, W) for a grey model, (samples, H, W, 3) for a colour
        one: each completion in the model's palette. The GIL is released.
        """
        for name, v, lo, hi in (("keep_rows", keep_rows, 0, 1 << 20), ("samples", samples, 1, 64),
                                ("top_k", top_k, 0, 1 << 30), ("seed", seed, 0, (1 << 64) - 1)):
            if not isinstance(v, int) or isinstance(v, bool) or not lo <= v <= hi:
                raise InputError(f"complete_image(): {name} must be an int in {lo}..{hi}, got {v!r}")
        if not (isinstance(temperature, (int, float)) and temperature >= 0) or not (0 < top_p <= 1):
            raise InputError(f"complete_image(): temperature >= 0 and top_p in (0, 1], got {temperature!r}, {top_p!r}")
        self._h.require("complete-image")
        channels, height, width = self._h.completion_shape()
        a = np.asarray(image)
        if height != width or a.ndim < 2 or a.shape[:2] != (height, width):
            raise InputError(f"complete_image(): image has shape {a.shape}; the model takes {height}x{width} images "
                             f"with {channels} channel(s)")
        pixels = _as_pixels(a, 0, channels, height, "complete_image")
        out = np.asarray(self._h.complete_image(np.ascontiguousarray(pixels, dtype=np.float32), keep_rows, samples,
                                                float(temperature), top_k, float(top_p), seed))
        out = out.reshape(samples, channels, height, width)
        return out[:, 0] if channels == 1 else np.moveaxis(out, 1, 3)

    def stream(self, step_inputs: Any = None, window: Optional[int] = None) -> Any:
        """A continual model (``tformer train --arch continual``) on a stream, as ``tformer stream``.

        With ``step_inputs`` (feature vectors (n, d_model), or ids / a str for a model of tokens): a
        fresh stream through them, the outputs of the steps that complete a window, (k, d_model) or
        (k, labels) logits. Without: a :class:`Stream` whose ``feed()`` continues its state from call
        to call. ``window`` replaces the model's (``--window``).
        """
        self._h.require("stream")
        s = Stream(self.path, window)
        return s if step_inputs is None else s.feed(step_inputs)

    @property
    def tokenizer(self) -> "Tokenizer":
        """The folder's tokenizer (:class:`Tokenizer`), loaded at the first use."""
        if getattr(self, "_tokenizer", None) is None:
            self._tokenizer = Tokenizer.load(self.path)
        return self._tokenizer

    def classify(self, inputs: Any, top_k: int = 1, color: Optional[str] = None) -> List[Dict[str, Any]]:
        """Classification: a dict per input, {"label", "score", "top_k": [(label, score), ...]}.

        What ``inputs`` are depends on the model (:attr:`capabilities`):

        - a text classifier ("classify-text": a BERT-family ``...ForSequenceClassification`` folder,
          ``tformer finetune``'s): a str, a list of str, or a list of (text_a, text_b) pairs, encoded,
          cut (the folder's finetune.json ``max_len``, else the model's length) and batched as
          ``tformer predict --task classify|pairs`` does;
        - a video classifier ("classify-clip": ``tformer train --arch vivit``): a clip folder of PNG
          frames (read in name order, as ``tformer classify`` reads one), an array (frames, H, W[, C])
          uint8 or float in [0, 1], a list of these, or an array (n, frames, H, W[, C]);
        - an image classifier ("classify-image"): a list of images, each an array (H, W[, C]) uint8
          (0..255) or float (0..1), or a PNG file's path; an array (n, H, W[, C]) is n images; a single
          path or (H, W) array is one. Each must have the model's size (an error names the image); grey
          and RGB are converted to the model's channels as the PNG reader does. A 3-d array is one
          (H, W, C) image when its last axis is 1 or 3 and H and W are the model's size, else n grey
          (n, H, W) images. ``color`` forces the conversion, as the CLI's ``--grayscale`` and ``--rgb``:
          "grayscale" makes each image grey first (PIL's convert("L"): 0.299 R + 0.587 G + 0.114 B),
          repeated into three channels for a model of RGB images; "rgb" reads each as RGB (grey
          repeated), refused for a model of grey images; None (the default) converts to the model's
          channels. It applies to images only (texts and clips refuse it).

        ``score`` is the label's softmax probability, each exp(x - max) / sum in double rounded to float
        (``tf_model_top``): for texts and clips the numbers ``tformer predict --json`` and ``tformer
        classify --json`` print, bit for bit; ``top_k`` the ``top_k`` likeliest labels, ties to the
        lower label index. Raises :class:`CapabilityError` for a model that classifies nothing.
        """
        if not isinstance(top_k, int) or isinstance(top_k, bool) or top_k < 1:
            raise InputError(f"classify(): top_k must be a positive int, got {top_k!r}")
        caps = self.capabilities
        if color is not None and ("classify-text" in caps or "classify-clip" in caps):
            raise InputError("classify(): color applies to images (an image classifier's), not to texts or clips")
        if "classify-text" in caps:
            logits = self._text_logits(inputs)
        elif "classify-clip" in caps:
            logits = np.asarray(self._h.classify_clips(self._clips(inputs)))
        else:
            if isinstance(inputs, np.ndarray) and inputs.ndim == 2:
                inputs = [inputs]
            logits = self.image_logits(inputs, color)
        names = self._h.labels()
        out = []
        for row in _tformer_top(np.ascontiguousarray(logits, dtype=np.float32), top_k):
            top = [(names[j], p) for j, p in row]
            out.append({"label": top[0][0], "score": top[0][1], "top_k": top})
        return out

    def _text_logits(self, texts: Any) -> np.ndarray:
        """texts (str, list of str, or list of pairs) -> the classifier's logits (n, labels) float32."""
        if isinstance(texts, str):
            texts = [texts]
        texts = list(texts)
        pairs = [isinstance(t, (tuple, list)) for t in texts]
        if any(pairs) and not all(pairs):
            raise InputError("classify(): give texts (str) or pairs ((text_a, text_b)), not both in one call")
        if texts and all(pairs):
            for i, t in enumerate(texts):
                if len(t) != 2:
                    raise InputError(f"classify(): texts[{i}] has {len(t)} items; a pair is (text_a, text_b)")
            return np.asarray(self._h.classify_texts(tuple(t[0] for t in texts), tuple(t[1] for t in texts)))
        return np.asarray(self._h.classify_texts(tuple(texts), None))

    def _clips(self, clips: Any) -> np.ndarray:
        """clips (see :meth:`classify`) -> float32 (n, frames, channels, size, size) in [0, 1] for this model."""
        frames, channels, size, _ = self._h.clip_shape()
        if isinstance(clips, np.ndarray) and clips.ndim == 5 or \
                isinstance(clips, np.ndarray) and clips.ndim == 4 and clips.shape[-1] not in (1, 3):
            clips = list(clips)
        elif isinstance(clips, (str, os.PathLike, np.ndarray)):
            clips = [clips]
        out = np.empty((len(clips), frames, channels, size, size), dtype=np.float32)
        for i, clip in enumerate(clips):
            if isinstance(clip, (str, os.PathLike)):
                buf, c, h, w = self._h.read_clip(os.fspath(clip))
                pixels = np.asarray(buf)
                what = os.fspath(clip)
                if (c, h, w) != (channels, size, size):
                    raise InputError(f"classify(): {what}: frames of {w}x{h}; the model takes {size}x{size} with "
                                     f"{channels} channel(s)")
                pixels = pixels.reshape(len(pixels), c, h, w)
            else:
                what = f"clips[{i}]"
                pixels = np.stack([_as_pixels(f, j, channels, size) for j, f in enumerate(np.asarray(clip))]) \
                    if np.asarray(clip).ndim in (3, 4) else None
                if pixels is None:
                    raise InputError(f"classify(): clips[{i}] has shape {np.asarray(clip).shape}; a clip is "
                                     "(frames, H, W[, C])")
            if len(pixels) != frames:
                raise InputError(f"classify(): {what}: {len(pixels)} frames; the model takes clips of num_frames "
                                 f"{frames}")
            out[i] = pixels
        return out

    def run(self, inputs: Dict[str, np.ndarray]) -> Dict[str, np.ndarray]:
        """Hugging Face's forward, as ``tformer hf-run``: named arrays in, the output fields out.

        ``inputs`` are named as the architecture's forward() arguments (input_ids, attention_mask,
        pixel_values, labels, ...); the outputs as the fields transformers returns (logits,
        last_hidden_state, loss, ...). The inputs are checked as hf-run checks a file (a missing,
        extra or misnamed input, float ids, ids outside the vocabulary raise :class:`InputError`).
        Arrays of float32/float16/int64/int32/int8/uint8/bool are taken; others raise.
        """
        if not isinstance(inputs, dict):
            raise InputError(f"run(): inputs must be a dict of name -> array, got {type(inputs).__name__}")
        arrays = [(name, *_safetensors.as_input(name, value)) for name, value in inputs.items()]
        try:
            outputs = self._h.run(arrays)
        except InputError as e:
            raise InputError(str(e).replace("inputs:", "run() inputs:", 1)) from None
        return {name: np.asarray(b) for name, b in outputs.items()}  # the library's buffers, not copied
