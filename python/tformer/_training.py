"""tformer.train: ``tformer train`` from Python, through the library's trainer (tformer/trainer.h)."""
from __future__ import annotations

import csv
import math
import os
from typing import Any, Callable, Dict, List, Optional, Sequence, Union

from ._tformer import Error, InputError, set_threads
from ._tformer import train as _train

Progress = Union[bool, None, Callable[[Dict[str, Any]], Any]]


def _text(key: str, v: Any) -> str:
    """A setting's value as the flag's text (bools true/false, lists comma-separated)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (list, tuple)):
        return ",".join(_text(key, x) for x in v)
    if isinstance(v, (int, float, str)):
        return str(v)
    raise InputError(f"train(): {key}={v!r}: a setting is a str, number, bool or list")


def _tqdm_callback(total_hint: Optional[int]) -> tuple:
    """(callback, close) drawing tqdm's bar; (None, no-op) without tqdm."""
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None, lambda: None
    bar = tqdm(total=total_hint, unit="step", desc="tformer train")

    def on_step(r: Dict[str, Any]) -> None:
        if "step" not in r or r["step"] <= 0:
            return
        bar.total = r["steps"]
        bar.update(r["step"] - bar.n)
        shown = {"loss": f"{r['loss']:.4f}"}
        if not math.isnan(r["val_loss"]):
            shown["val_loss"] = f"{r['val_loss']:.4f}"
        bar.set_postfix(shown, refresh=False)

    return on_step, bar.close


def _metrics(out: str, stopped: bool) -> Dict[str, Any]:
    """The run folder's losses.csv: each column as a list, the last values, the folder."""
    cols: Dict[str, List[float]] = {}
    path = os.path.join(out, "losses.csv")
    if os.path.exists(path):
        with open(path, encoding="utf-8", newline="") as f:
            for row in csv.DictReader(f):
                for k, v in row.items():
                    cols.setdefault(k, []).append(float(v) if v not in ("", None) else math.nan)
    last: Dict[str, float] = {}
    for k, v in cols.items():
        seen = [x for x in v if not math.isnan(x)]
        if seen:
            last[k] = seen[-1]
    return {"run_dir": out, "stopped": stopped, "steps": int(last.get("step", 0)), "last": last, "history": cols}


def _make_parents(out: str) -> None:
    """The run folder's parents, as ``tformer train --out runs/gpt/a`` makes them (mkdir -p of runs/gpt)."""
    parent = os.path.dirname(os.path.normpath(out))
    if parent:
        try:
            os.makedirs(parent, exist_ok=True)
        except OSError as e:
            raise Error(f"train(): out {out}: cannot create {e.filename or parent}: {e.strerror}") from None


def train(arch: str = "gpt", out: Optional[Union[str, os.PathLike]] = None, *,
          data: Optional[Union[str, os.PathLike, Sequence[Union[str, os.PathLike]]]] = None,
          tokenizer: Optional[str] = None, src: Optional[str] = None, tgt: Optional[str] = None,
          valid_src: Optional[str] = None, valid_tgt: Optional[str] = None, data_dir: Optional[str] = None,
          config: Optional[str] = None, resume: bool = False, allow_changes: bool = False, overwrite: bool = False,
          threads: Optional[int] = None, progress: Progress = True, **settings: Any) -> Dict[str, Any]:
    """Trains a model as ``tformer train --arch ARCH --out OUT ...`` does, in this process.

    The keywords are the command's: ``data``, ``tokenizer``, ``src``, ``tgt``, ``valid_src``,
    ``valid_tgt``, ``data_dir``, ``config`` (a JSON file), ``resume``, ``allow_changes``,
    ``overwrite``, ``threads``; every other keyword is a setting of the trainer or the family
    (``steps=200, layers=2, d_model=64, lr=3e-4, norm_first=True``: the flags' names with ``_``;
    ``tformer train --arch ARCH --help`` lists them). The GIL is released while it trains.

    ``progress``: True draws tqdm's bar when tqdm is installed; a callable gets each step's report
    (a dict: step, steps, loss, lr, grad_norm, val_loss (NaN unless evaluated), val_<metric>,
    elapsed_s, eta_s); None or False, nothing. An exception raised by the callback, or Ctrl-C
    (KeyboardInterrupt), stops the run after the step in progress with its checkpoint written
    (continue with ``resume=True``), then propagates.

    Returns the run folder's metrics: {"run_dir", "stopped" (True at ``stop_at``), "steps",
    "last": the last value of each losses.csv column, "history": each column as a list}.
    """
    if out is None:
        raise InputError("train(): out= (the run folder) is required")
    if allow_changes and not resume:
        raise InputError("train(): allow_changes goes with resume")
    if threads is not None:
        set_threads(threads)
    files = [] if data is None else [data] if isinstance(data, (str, os.PathLike)) else list(data)
    pairs = tuple((k, _text(k, v)) for k, v in settings.items())
    close: Callable[[], None] = lambda: None
    callback: Any = progress if callable(progress) else None
    if progress is True:
        steps = settings.get("steps")
        callback, close = _tqdm_callback(steps if isinstance(steps, int) else None)
    mode = 0 if not resume else 2 if allow_changes else 1
    _make_parents(os.fspath(out))
    opt = (lambda p: None if p is None else os.fspath(p))
    try:
        rc = _train(arch, os.fspath(out), pairs, tuple(os.fspath(f) for f in files), opt(tokenizer), opt(src), opt(tgt),
                    opt(valid_src), opt(valid_tgt), opt(data_dir), opt(config), mode, int(overwrite), callback)
    finally:
        close()
    return _metrics(os.fspath(out), rc == 1)
