"""Type stubs of the tformer package (docs/python.md)."""
import os
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple, TypedDict, Union

import numpy as np
import numpy.typing as npt

PathLike = Union[str, os.PathLike[str]]
Image = Union[npt.NDArray[Any], PathLike]

class Error(Exception):
    """tformer's errors: the library's message, naming the file or argument."""

class ModelNotFoundError(Error, FileNotFoundError):
    """A folder that is not a model (no config.json)."""

class CapabilityError(Error, ValueError):
    """A call the model cannot make; the message lists what it can."""

class InputError(Error, ValueError):
    """An argument of the wrong type, dtype, shape or value."""

kernels: str
"""The row kernels and BLAS the library runs on this CPU."""

def set_threads(n: int) -> None:
    """The library's thread count, for every model of the process."""

def load(path: PathLike, threads: Optional[int] = None) -> Model:
    """Opens a model folder (config.json picks the family)."""

class Classification(TypedDict):
    label: str
    score: float
    top_k: List[Tuple[str, float]]

class FillMaskChoice(TypedDict):
    token_id: int
    token: str
    score: float
    position: int

class Model:
    """A loaded model: read-only, shareable between threads; every call releases the GIL."""

    family: str
    model_type: str
    architecture: Optional[str]
    path: str
    capabilities: List[str]
    def __init__(self, path: PathLike, threads: Optional[int] = None) -> None: ...
    @property
    def config(self) -> Dict[str, Any]:
        """config.json as a dict."""
    def close(self) -> None:
        """Frees the C memory now; later calls raise Error."""
    def __enter__(self) -> Model: ...
    def __exit__(self, *exc: Any) -> None: ...
    def embed(
        self,
        texts: Union[str, Sequence[str]],
        batch_size: int = 32,
        normalize: Optional[bool] = None,
        pooling: Optional[str] = None,
        max_length: Optional[int] = None,
    ) -> npt.NDArray[np.float32]:
        """(n, d) float32 sentence embeddings, as `tformer embed`."""
    def fill_mask(self, text: str, top_k: int = 5) -> List[List[FillMaskChoice]]:
        """The top_k likeliest tokens at each mask token, as the fill-mask pipeline."""
    def generate(
        self,
        prompt: str,
        max_tokens: Optional[int] = None,
        temperature: Optional[float] = None,
        top_k: Optional[int] = None,
        top_p: Optional[float] = None,
        repetition_penalty: Optional[float] = None,
        beam: Optional[int] = None,
        seed: Optional[int] = None,
        length_penalty: Optional[float] = None,
        stop: Optional[str] = None,
    ) -> str:
        """The prompt's continuation, as `tformer generate`."""
    def generate_stream(self, prompt: str, **settings: Any) -> Iterator[str]:
        """generate()'s text piece by piece."""
    def translate(
        self,
        texts: Union[str, Sequence[str]],
        beam: Optional[int] = None,
        length_penalty: Optional[float] = None,
        max_len_a: Optional[float] = None,
        max_len_b: Optional[int] = None,
        batch_size: Optional[int] = None,
        beam_stop: Optional[str] = None,
    ) -> List[str]:
        """Each text translated, as `tformer translate`."""
    def labels(self) -> List[str]:
        """The image classifier's label names."""
    def image_logits(self, images: Union[npt.NDArray[Any], Sequence[Image]]) -> npt.NDArray[np.float32]:
        """(n, labels) float32 logits of images."""
    def classify(self, images: Union[npt.NDArray[Any], Sequence[Image], PathLike], top_k: int = 1) -> List[Classification]:
        """A {label, score, top_k} dict per image."""
    def run(self, inputs: Dict[str, npt.NDArray[Any]]) -> Dict[str, npt.NDArray[Any]]:
        """Hugging Face's forward, as `tformer hf-run`."""
