#!/usr/bin/env python3
"""safetensors fixtures written by the reference implementation (pip
`safetensors`, `numpy`, `ml_dtypes` for bfloat16), for tests/test_safetensors.c.

    python3 tests/ref/gen_safetensors_fixtures.py tests/data

writes all_dtypes.safetensors (one tensor of every dtype tformer reads, with
awkward values: subnormal halves, infinities, negative integers) and
all_dtypes.json holding the same values as decimal numbers ("inf", "-inf"
as strings).

    python3 tests/ref/gen_safetensors_fixtures.py --check FILE

loads a file written by tformer with the reference reader and prints its
tensors (the CLI test runs this on torch-run's output).
"""
import json
import sys

import ml_dtypes
import numpy as np
from safetensors.numpy import load_file, save_file


def tensors():
    return {
        "f32": np.array([[1.0, -2.5, 3.25e-38], [np.inf, -0.0, 65504.0]], dtype=np.float32),
        "f16": np.array([1.0, -2.5, 6.0e-8, 6.1e-5, 65504.0, -np.inf, 0.333], dtype=np.float16),
        "bf16": np.array([[1.0, -2.5], [3.0e38, 1.0e-39], [0.1, -7.0]], dtype=ml_dtypes.bfloat16),
        "i64": np.array([0, -1, 2147483647, -2147483648], dtype=np.int64),
        "i32": np.array([[7, -8, 9]], dtype=np.int32),
        "u8": np.array([0, 1, 255, 128], dtype=np.uint8),
        "bool": np.array([[True, False, True]], dtype=np.bool_),
        "scalar": np.array(4.5, dtype=np.float32),
        "empty": np.zeros((0, 3), dtype=np.float32),
    }


def main():
    if sys.argv[1] == "--check":
        for name, t in load_file(sys.argv[2]).items():
            print(name, t.dtype, t.shape)
        return
    out = sys.argv[1]
    ts = tensors()
    save_file(ts, f"{out}/all_dtypes.safetensors", metadata={"source": "safetensors reference"})
    def num(x):  # JSON has no infinities: spell them as strings
        return x if np.isfinite(x) else ("inf" if x > 0 else "-inf")

    values = {k: {"shape": list(v.shape), "values": [num(float(x)) for x in v.astype(np.float64).ravel()]}
              for k, v in ts.items()}
    with open(f"{out}/all_dtypes.json", "w") as f:
        json.dump(values, f, indent=1)


if __name__ == "__main__":
    main()
