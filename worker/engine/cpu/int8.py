"""int8 CPU inference for linear layers: int8 weights, dynamic int8 activations.

:class:`Int8Linear` replaces an ``nn.Linear``: the weight is quantized once, symmetric, one
scale per output channel (``weight_scales``); each call quantizes its input on the fly (one
asymmetric uint8 scale and zero point for the whole ``[T, in]`` tensor, from its min and max),
multiplies in int8 with int32 accumulation and returns fp32 ``[T, out]`` with the bias added.
All of it is one oneDNN call (``torch.ops.quantized.linear_dynamic`` on weights prepacked for
the ``onednn`` engine; ``fbgemm`` where oneDNN is not built in), VNNI on CPUs that have it.

On the packed batch the activation scale is shared by all the batch's tokens, so an int8 output
depends (slightly, within the quality gate's bounds) on which texts share its batch; fp32
outputs do not.

Activation outliers (a few channels of BERT's LayerNorm and GELU outputs run 10-25x the
median) would set that one scale; SmoothQuant moves them into the weight: per input channel
``s_j = max|X_j|^alpha / max|W_j|^(1 - alpha)``, ``W' = W diag(s)``, ``X' = X / s`` (one
elementwise multiply of the input), with ``max|X_j|`` measured on a calibration sample
(:func:`input_absmax`), alpha ``SMOOTH_ALPHA``.

Without VNNI (AVX2's ``vpmaddubsw`` saturates int16 pair sums) activations use 7 bits
(``reduce_range``), as PyTorch's own x86 dynamic quantization does.

Attention, LayerNorm, embeddings, pooling and heads are left in fp32: only the modules passed to
:func:`quantize_linears` change.
"""

from __future__ import annotations

import contextlib
import threading
import warnings
from collections.abc import Callable, Iterator

import torch
from torch import Tensor, nn

from poolq.worker.engine.cpu.cpu_features import has_vnni


def weight_scales(weight: Tensor) -> Tensor:
    """Symmetric per-output-channel scales of a ``[out, in]`` fp32 weight: ``absmax / 127``."""
    return weight.abs().amax(dim=1).clamp_min(1e-12) / 127.0


def quantized_engine() -> str:
    engines = torch.backends.quantized.supported_engines
    if "onednn" in engines:
        return "onednn"
    if "fbgemm" in engines:
        return "fbgemm"
    raise ValueError(
        f"dtype int8 needs the onednn or fbgemm quantized engine; this torch has {engines}"
    )


_ENGINE_LOCK = threading.Lock()  # the engine setting is process-wide; models load in threads


@contextlib.contextmanager
def _engine(name: str) -> Iterator[None]:
    with _ENGINE_LOCK:
        before = torch.backends.quantized.engine
        torch.backends.quantized.engine = name
        try:
            yield
        finally:
            torch.backends.quantized.engine = before


SMOOTH_ALPHA = 0.7


class Int8Linear(nn.Module):
    """``nn.Linear`` with an int8 weight and dynamic int8 activations; fp32 in, fp32 out.

    ``input_absmax``: ``[in]`` per-channel max ``|x|`` seen on calibration inputs; given, the
    layer is smoothed (module docstring) with ``alpha``."""

    def __init__(
        self,
        linear: nn.Linear,
        *,
        input_absmax: Tensor | None = None,
        alpha: float = SMOOTH_ALPHA,
        reduce_range: bool | None = None,
    ) -> None:
        super().__init__()
        self.in_features = linear.in_features
        self.out_features = linear.out_features
        if reduce_range is None:
            reduce_range = not has_vnni()
        self.reduce_range = reduce_range
        w = linear.weight.detach().float().cpu()  # [out, in]
        self.input_scale: Tensor | None = None  # [in]: x * input_scale feeds the int8 GEMM
        if input_absmax is not None:
            s = smoothing_scales(input_absmax.float().cpu(), w, alpha)  # [in]
            w = w * s  # column j times s_j
            self.input_scale = 1.0 / s
        scales = weight_scales(w).double()  # [out]
        zeros = torch.zeros(w.shape[0], dtype=torch.long)
        bias = linear.bias.detach().float().cpu() if linear.bias is not None else None
        with warnings.catch_warnings():
            # torch 2.13 marks quantized tensors deprecated; the prepacked oneDNN weight is
            # what the int8 kernel takes (see the module docstring)
            warnings.filterwarnings("ignore", message=".*quantize_per_tensor.*deprecated")
            qweight = torch.quantize_per_channel(w, scales, zeros, 0, torch.qint8)
            self.engine = quantized_engine()
            with _engine(self.engine):
                self._packed = torch.ops.quantized.linear_prepack(qweight, bias)

    def forward(self, x: Tensor) -> Tensor:
        # x: [..., in] fp32 -> [..., out] fp32; the kernel takes 2-D input
        lead = x.shape[:-1]
        x = x.reshape(-1, self.in_features).float()  # [T, in]
        if self.input_scale is not None:
            x = x * self.input_scale  # a new [T, in]: the caller's tensor is left as it was
        y = torch.ops.quantized.linear_dynamic(x, self._packed, self.reduce_range)  # [T, out]
        return y.view(*lead, self.out_features)

    def extra_repr(self) -> str:
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"engine={self.engine}, reduce_range={self.reduce_range}"
        )


def smoothing_scales(input_absmax: Tensor, weight: Tensor, alpha: float) -> Tensor:
    """SmoothQuant's per-input-channel ``s = max|X|^alpha / max|W|^(1 - alpha)``, ``[in]``."""
    w_absmax = weight.abs().amax(dim=0).clamp_min(1e-5)  # [in]
    s = input_absmax.clamp_min(1e-5).pow(alpha) / w_absmax.pow(1 - alpha)
    return s.clamp(1e-4, 1e4)


@contextlib.contextmanager
def input_absmax(module: nn.Module) -> Iterator[dict[str, Tensor]]:
    """While open, record per-channel ``max |x|`` of the input of every ``nn.Linear`` inside
    ``module``, by module name (``[in]`` each); run the calibration forwards inside."""
    seen: dict[str, Tensor] = {}

    def hook(name: str) -> Callable[[nn.Module, tuple[Tensor, ...], Tensor], None]:
        def record(_mod: nn.Module, args: tuple[Tensor, ...], _out: Tensor) -> None:
            x = args[0].detach().reshape(-1, args[0].shape[-1]).abs().amax(dim=0).float()
            seen[name] = torch.maximum(seen[name], x) if name in seen else x

        return record

    handles = [
        m.register_forward_hook(hook(n))
        for n, m in module.named_modules()
        if isinstance(m, nn.Linear)
    ]
    try:
        yield seen
    finally:
        for h in handles:
            h.remove()


def quantize_linears(module: nn.Module, absmax: dict[str, Tensor] | None = None) -> int:
    """Replace every ``nn.Linear`` inside ``module`` (in place) by :class:`Int8Linear`, smoothed
    where ``absmax`` (from :func:`input_absmax` on the same module) has its name; returns how
    many were replaced. ``module`` itself, if a Linear, is not replaced: wrap it instead."""
    absmax = absmax or {}
    names = [n for n, m in module.named_modules() if isinstance(m, nn.Linear) and n]
    for name in names:
        parent_name, _, attr = name.rpartition(".")
        parent = module.get_submodule(parent_name) if parent_name else module
        setattr(parent, attr, Int8Linear(getattr(parent, attr), input_absmax=absmax.get(name)))
    return len(names)
