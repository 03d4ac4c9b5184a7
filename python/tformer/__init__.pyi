"""Type stubs of the tformer package (docs/python.md)."""
import os
from typing import Any, Callable, Dict, Iterator, List, Literal, Optional, Sequence, Tuple, TypedDict, Union

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

def load(path: PathLike, threads: Optional[int] = None, precision: str = "f32") -> Model:
    """Opens a model folder (config.json picks the family); precision "f32", "bf16" or "int8"."""

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
    def __init__(self, path: PathLike, threads: Optional[int] = None, precision: str = "f32") -> None: ...
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
        normalize: Optional[bool] = True,
        pooling: Optional[str] = None,
        max_length: Optional[int] = None,
    ) -> npt.NDArray[np.float32]:
        """(n, d) float32 sentence embeddings, as `tformer embed`; L2-normalised unless normalize=False."""
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
        quantize: Optional[str] = None,
    ) -> str:
        """The prompt's continuation, as `tformer generate` (quantize="int8": as `--precision int8`)."""
    def generate_stream(self, prompt: str, **settings: Any) -> Iterator[str]:
        """generate()'s text piece by piece."""
    def translate(
        self,
        texts: Union[str, Sequence[str]],
        beam: Optional[int] = 5,
        length_penalty: Optional[float] = None,
        max_len_a: Optional[float] = None,
        max_len_b: Optional[int] = None,
        batch_size: Optional[int] = None,
        beam_stop: Optional[str] = None,
    ) -> List[str]:
        """Each text translated, as `tformer translate` (beam 5 unless given; None settings: the folder's)."""
    def labels(self) -> List[str]:
        """The classifier's label names (images, texts or clips)."""
    def tag(self, texts: Union[str, Sequence[str]]) -> Any:
        """Per text, its words each with its label (None: cut away), as `tformer predict --task tag`."""
    def answer(self, question: Union[str, Sequence[str]], context: Union[str, Sequence[str]]) -> Any:
        """{answer, start, end} (character offsets in the context), as `tformer predict --task span`."""
    def image_logits(
        self, images: Union[npt.NDArray[Any], Sequence[Image]], color: Optional[Literal["rgb", "grayscale"]] = None
    ) -> npt.NDArray[np.float32]:
        """(n, labels) float32 logits of images."""
    def classify(
        self,
        inputs: Union[str, Sequence[str], Sequence[Tuple[str, str]], npt.NDArray[Any], Sequence[Image], PathLike],
        top_k: int = 1,
        color: Optional[Literal["rgb", "grayscale"]] = None,
    ) -> List[Classification]:
        """A {label, score, top_k} dict per text, text pair, clip or image (the model's kind)."""
    def run(self, inputs: Dict[str, npt.NDArray[Any]]) -> Dict[str, npt.NDArray[Any]]:
        """Hugging Face's forward, as `tformer hf-run`."""
    def caption(
        self,
        images: Union[npt.NDArray[Any], Sequence[Image], PathLike],
        beam: int = 1,
        max_tokens: Optional[int] = None,
        attention: bool = False,
        color: Optional[Literal["rgb", "grayscale"]] = None,
    ) -> List[Any]:
        """A caption (str) per image, as `tformer caption`; with attention=True a Caption dict per image."""
    def complete_image(
        self,
        image: npt.NDArray[Any],
        keep_rows: int,
        samples: int = 4,
        temperature: float = 1.0,
        top_k: int = 0,
        top_p: float = 1.0,
        seed: int = 0,
    ) -> npt.NDArray[np.float32]:
        """An ImageGPT's completions of an image's top rows, as `tformer complete-image`."""
    def stream(self, step_inputs: Any = None, window: Optional[int] = None) -> Any:
        """A continual model on a stream: the outputs of step_inputs, or a Stream when none are given."""
    @property
    def tokenizer(self) -> Tokenizer:
        """The folder's tokenizer."""

class Stream:
    """A continual model in step mode, its state kept between feed() calls."""

    path: str
    d_model: int
    window: int
    vocab_size: int
    labels: Optional[List[str]]
    def __init__(self, path: str, window: Optional[int] = None) -> None: ...
    @property
    def steps(self) -> int: ...
    def ids(self, text: str) -> List[int]:
        """A model of tokens: text's ids."""
    def feed(self, step_inputs: Union[str, npt.NDArray[Any], List[Any]]) -> npt.NDArray[np.float32]:
        """(k, d_model) outputs, or (k, labels) logits, of the steps that complete a window."""
    def classify(self, logits: npt.NDArray[Any]) -> List[Dict[str, Any]]:
        """{label, score} per row of a classifier's logits."""

class Caption(TypedDict):
    text: str
    words: List[str]
    attention: Optional[npt.NDArray[np.float32]]

class Tokenizer:
    """A tokenizer folder or file, as `tformer encode` / `tformer decode` read it."""

    path: str
    kind: str
    vocab_size: int
    model_max_length: int
    special_ids: Dict[str, Optional[int]]
    def __init__(self, path: PathLike) -> None: ...
    @classmethod
    def load(cls, path: PathLike) -> Tokenizer:
        """Loads a tokenizer (what --tokenizer takes)."""
    def __len__(self) -> int: ...
    def encode(
        self, text: str, pair: Optional[str] = None, add_special_tokens: bool = False, max_length: Optional[int] = None
    ) -> List[int]:
        """The ids of text (with the model's special tokens when asked)."""
    def encode_batch(
        self,
        texts: Sequence[str],
        pairs: Optional[Sequence[str]] = None,
        add_special_tokens: bool = False,
        max_length: Optional[int] = None,
    ) -> List[List[int]]:
        """encode() of each text, the GIL released for the batch."""
    def encode_with_types(
        self, text: str, pair: Optional[str] = None, max_length: Optional[int] = None
    ) -> Tuple[List[int], List[int]]:
        """(ids, token type ids) with the special tokens."""
    def decode(
        self, ids: Sequence[int], skip_special_tokens: bool = False, clean_up_tokenization_spaces: Optional[bool] = None
    ) -> str:
        """The text of ids, as Hugging Face's decode (WordPiece: BertTokenizerFast's)."""
    def decode_batch(
        self,
        batch: Sequence[Sequence[int]],
        skip_special_tokens: bool = False,
        clean_up_tokenization_spaces: Optional[bool] = None,
    ) -> List[str]:
        """decode() of each id list."""
    def token_to_id(self, token: str) -> Optional[int]:
        """A vocabulary entry's id, or None."""

class SentenceTransformer:
    """sentence-transformers' SentenceTransformer (encode and its usual arguments) on tformer."""

    model: Model
    prompts: Dict[str, str]
    default_prompt_name: Optional[str]
    truncate_dim: Optional[int]
    device: str
    def __init__(
        self,
        model_name_or_path: str,
        device: Optional[str] = None,
        prompts: Optional[Dict[str, str]] = None,
        default_prompt_name: Optional[str] = None,
        truncate_dim: Optional[int] = None,
        threads: Optional[int] = None,
        **unused: Any,
    ) -> None: ...
    @property
    def max_seq_length(self) -> Optional[int]: ...
    @max_seq_length.setter
    def max_seq_length(self, n: int) -> None: ...
    def get_sentence_embedding_dimension(self) -> int: ...
    def get_max_seq_length(self) -> Optional[int]: ...
    def encode(
        self,
        sentences: Union[str, List[str]],
        prompt_name: Optional[str] = None,
        prompt: Optional[str] = None,
        batch_size: int = 32,
        show_progress_bar: Optional[bool] = None,
        output_value: Optional[str] = "sentence_embedding",
        precision: str = "float32",
        convert_to_numpy: bool = True,
        convert_to_tensor: bool = False,
        device: Optional[str] = None,
        normalize_embeddings: bool = False,
    ) -> Any:
        """(n, d) float32 for a list, (d,) for one str, as sentence-transformers' encode."""
    def similarity(self, a: Any, b: Any) -> npt.NDArray[np.float32]:
        """Cosine similarities of two sets of embeddings."""

class TrainResult(TypedDict):
    run_dir: str
    stopped: bool
    steps: int
    last: Dict[str, float]
    history: Dict[str, List[float]]

def train(
    arch: str = "gpt",
    out: Optional[PathLike] = None,
    *,
    data: Optional[Union[PathLike, Sequence[PathLike]]] = None,
    tokenizer: Optional[str] = None,
    src: Optional[str] = None,
    tgt: Optional[str] = None,
    valid_src: Optional[str] = None,
    valid_tgt: Optional[str] = None,
    data_dir: Optional[str] = None,
    config: Optional[str] = None,
    resume: bool = False,
    allow_changes: bool = False,
    overwrite: bool = False,
    threads: Optional[int] = None,
    progress: Union[bool, None, Callable[[Dict[str, Any]], Any]] = True,
    **settings: Any,
) -> TrainResult:
    """`tformer train --arch ARCH --out OUT ...` in this process; the run folder's metrics."""
