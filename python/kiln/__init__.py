"""kiln — an optimizing compiler for ONNX models, from Python.

The package is a thin layer over kiln's C API (the extension module ``kiln._kiln``):
``compile`` runs the whole compiler in-process into a bundle in memory (what
``kiln compile`` writes), ``load`` opens a bundle file, ``Bundle.run`` runs it with
numpy arrays, ``bench`` measures it as ``kiln bench --json`` does. The GIL is
released while kiln compiles and runs, so other Python threads go on.

Failures inside kiln raise ``KilnError`` (a ``RuntimeError``) with the message the
CLI prints after ``kiln compile: `` or ``kiln run: ``; inputs of the wrong dtype
raise ``TypeError``, of the wrong shape ``ValueError``.

    import numpy as np, kiln
    bundle = kiln.compile("model.onnx", input_shapes={"x": (1, 3, 224, 224)})
    (name, shape, dtype), = bundle.inputs
    outputs = bundle.run({name: np.zeros(shape, dtype)})
    bundle.save("model.kiln")
"""
from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple, Union

import numpy as np

from . import _kiln
from ._kiln import KilnError

__version__: str = _kiln.version
__all__ = ["Bundle", "KilnError", "TensorInfo", "bench", "compile", "load", "__version__"]

PathLike = Union[str, "os.PathLike[str]"]


class TensorInfo(NamedTuple):
    """An input or output of a bundle. ``dtype`` is a numpy dtype (bfloat16, the
    float8/float4 types and int4/int2 come from ml_dtypes; without it, the kiln
    dtype's name)."""

    name: str
    shape: Tuple[int, ...]
    dtype: Union[np.dtype, str]


class Bundle:
    """A compiled model: the bundle (a ``model.kiln`` file's bytes) and the runtime's
    model of it, opened on first use. Made by :func:`compile`, :func:`load` or
    :meth:`from_bytes`; closed (the model, its threads and memory) when it is
    garbage. One Bundle runs one call at a time; threads that share it take turns."""

    __slots__ = ("_native", "compile_stats")

    def __init__(self, native: Any, compile_stats: Optional[Dict[str, Any]] = None) -> None:
        # not for users: kiln.compile, kiln.load and Bundle.from_bytes make Bundles
        if not isinstance(native, _kiln.Bundle):
            raise TypeError("Bundle objects come from kiln.compile, kiln.load or Bundle.from_bytes")
        self._native = native
        #: what ``kiln compile`` prints (kernels, arena_bytes, weights_bytes, code_bytes,
        #: flops, generic_groups, compile_s, ...) for a compiled bundle; None for a loaded one
        self.compile_stats = compile_stats

    @classmethod
    def load(cls, path: PathLike, threads: Optional[int] = None) -> "Bundle":
        """Opens a bundle file. ``threads``: how many threads run the kernels (the
        caller's included; None or 0: every online core)."""
        return cls(_kiln.load(path, threads))

    @classmethod
    def from_bytes(cls, data: bytes, threads: Optional[int] = None) -> "Bundle":
        """Opens a bundle held in memory (what :meth:`to_bytes` returns)."""
        return cls(_kiln.from_bytes(data, threads))

    def save(self, path: PathLike) -> None:
        """Writes the bundle file (``kiln run`` and :func:`load` read it)."""
        self._native.save(path)

    def to_bytes(self) -> bytes:
        """The bundle file's bytes."""
        return self._native.to_bytes()

    def run(self, inputs: Mapping[str, Any]) -> Dict[str, np.ndarray]:
        """Runs the model once on ``{input name: array}``, every input given, and
        returns ``{output name: array}`` in the model's output order (new arrays).

        An array must have the input's dtype (``TypeError`` otherwise) and shape
        (``ValueError``); a C-contiguous one goes to the runtime without a copy.
        Values that are not arrays (lists, scalars) are converted to the input's
        dtype. An unknown name raises ``KilnError``, a missing input ``ValueError``."""
        if not isinstance(inputs, dict):
            if not isinstance(inputs, Mapping):
                raise TypeError("run() takes a dict {input name: array}, not %s" % type(inputs).__name__)
            inputs = dict(inputs)
        return self._native.run(inputs)

    __call__ = run

    def __reduce__(self) -> Tuple[Any, Tuple[bytes]]:
        # pickled as its bytes (to another process, say), opened again there
        return (Bundle.from_bytes, (self.to_bytes(),))

    @property
    def inputs(self) -> List[TensorInfo]:
        """The model's inputs, in order: (name, shape, dtype)."""
        return [TensorInfo(n, s, d) for n, s, d in self._native.inputs()]

    @property
    def outputs(self) -> List[TensorInfo]:
        """The model's outputs, in order: (name, shape, dtype)."""
        return [TensorInfo(n, s, d) for n, s, d in self._native.outputs()]

    @property
    def threads(self) -> int:
        """Threads that run the kernels, the caller's included. Settable (0 or None:
        every online core); setting it restarts the model's thread pool."""
        return self._native.threads

    @threads.setter
    def threads(self, n: Optional[int]) -> None:
        self._native.threads = n

    @property
    def name(self) -> str:
        """The model's file name, as the compiler saw it."""
        return self._native.name

    @property
    def target(self) -> str:
        """The target it was compiled for ("host", "x86_64-avx2", "aarch64", ...)."""
        return self._native.target

    @property
    def target_triple(self) -> str:
        return self._native.target_triple

    @property
    def compiler_version(self) -> str:
        return self._native.compiler_version

    @property
    def arena_bytes(self) -> int:
        """Bytes of the one arena holding the intermediates and the workspace."""
        return self._native.arena_bytes

    @property
    def weights_bytes(self) -> int:
        return self._native.weights_bytes

    @property
    def kernel_count(self) -> int:
        """Kernels the plan calls."""
        return self._native.kernel_count

    @property
    def size(self) -> int:
        """Bytes of the bundle file."""
        return self._native.size

    def __repr__(self) -> str:
        try:
            return "<kiln.Bundle %s for %s, %d kernels, %d bytes>" % (self.name, self.target, self.kernel_count,
                                                                     self.size)
        except KilnError:  # a bundle for another CPU does not open here
            return "<kiln.Bundle, %d bytes, not runnable here>" % self.size


def compile(path: PathLike, target: Optional[str] = "host", opt_level: int = 2,
            input_shapes: Optional[Mapping[str, Sequence[int]]] = None,
            threads: Optional[int] = None) -> Bundle:
    """Compiles an ONNX model into a bundle in memory, as ``kiln compile`` would
    write it (``target``, ``opt_level`` 0-3 and ``input_shapes`` mean ``--target``,
    ``-O`` and ``--input-shape NAME:DIMS``: symbolic dimensions are 1 unless bound).
    ``threads``: how many threads the bundle's model runs on (None or 0: every online
    core). Raises ``KilnError`` with the message ``kiln compile`` prints (a missing
    file, an unsupported op, ...). A bundle for another CPU can be saved, not run."""
    shapes = None if input_shapes is None else {str(k): tuple(v) for k, v in dict(input_shapes).items()}
    native, stats = _kiln.compile(path, None if target is None else str(target), opt_level, shapes, threads)
    return Bundle(native, stats)


def load(path: PathLike, threads: Optional[int] = None) -> Bundle:
    """Opens a bundle file; the same as :meth:`Bundle.load`."""
    return Bundle.load(path, threads)


def _is_bundle_file(path: PathLike) -> bool:
    # a bundle is a tar archive ("ustar" at offset 257): kiln bench's own test (cli/bench.c)
    try:
        with open(path, "rb") as f:
            head = f.read(262)
    except OSError:
        return False
    return len(head) == 262 and head[257:262] == b"ustar"


def bench(model: Union[PathLike, Bundle], inputs: Optional[Mapping[str, Any]] = None, *,
          threads: Optional[int] = None, repeat: int = 20, warmup: int = 3, profile_runs: int = 5,
          opt_level: int = 2, input_shapes: Optional[Mapping[str, Sequence[int]]] = None) -> Dict[str, Any]:
    """Measures a model as ``kiln bench --json`` does and returns its report: an
    .onnx file is compiled first (``opt_level``, ``input_shapes``; ``compile_s`` and
    ``generic_groups`` are then known), a .kiln file or a Bundle is used as it is.
    After ``warmup`` runs, ``repeat`` timed runs (``kiln_ms_median``, ``_p90``,
    ``_min``, ``_mean``), then ``profile_runs`` runs with per-kernel timing
    (``kernels``, against the measured peak). Inputs not given get the seeded random
    data ``kiln bench`` invents. The comparison with ONNX Runtime (``--compare``) is
    not done here: its fields (``ort_*``, ``ratio``, ``max_abs_diff``, ``outputs``)
    are None. The model runs on a model of its own, with ``threads`` threads."""
    if inputs is not None and not isinstance(inputs, dict):
        inputs = dict(inputs)
    is_onnx = False
    stats: Dict[str, Any] = {}
    if isinstance(model, Bundle):
        if input_shapes:
            raise ValueError("input_shapes applies to .onnx models; a Bundle is compiled already")
        bundle, label = model, model.name
    elif _is_bundle_file(model):
        if input_shapes:
            raise ValueError("input_shapes applies to .onnx models; %s is a bundle" % os.fspath(model))
        bundle, label = load(model), os.fspath(model)
    else:
        bundle = compile(model, opt_level=opt_level, input_shapes=input_shapes)
        label, is_onnx, stats = os.fspath(model), True, bundle.compile_stats or {}
    text = bundle._native.bench_json(inputs, threads, repeat, warmup, profile_runs, label, int(is_onnx), opt_level,
                                     float(stats.get("compile_s", 0.0)), int(stats.get("generic_groups", 0)))
    return json.loads(text)
