"""Precision chosen by the CPU: ``auto`` (the default) is bf16 only where the CPU has native bf16
(flags patched in here, never this machine's), fp32 otherwise; an explicit bf16 on a CPU without
it runs with a warning that gives the measured slowdown; int8 is CPU-only."""

import logging

import pytest
import torch

from poolq.worker.config.profile import Profile
from poolq.worker.engine.cpu import cpu_features
from poolq.worker.engine.execution.device import resolve_precision, warn_emulated_bf16
from poolq.worker.engine.process_options import process_options_set

CPU = torch.device("cpu")
NO_BF16 = frozenset({"avx2", "avx512f", "avx512bw", "avx512_vnni", "fma"})  # this kind of Xeon


def simulate_cpu(monkeypatch: pytest.MonkeyPatch, flags: set[str] | frozenset[str]) -> None:
    """The process's CPU reads as one with ``flags`` (``cpu_features.cpu_flags``)."""
    monkeypatch.setattr(cpu_features, "cpu_flags", lambda: frozenset(flags))


@pytest.fixture
def auto_bf16():
    """``dtype = "auto"`` may pick bf16 (the suite's conftest turns it off)."""
    with process_options_set(auto_bf16=True):
        yield


@pytest.mark.parametrize("name", [None, "auto"])
def test_auto_is_fp32_on_a_cpu_without_native_bf16(name):
    assert resolve_precision(name, CPU, NO_BF16) == "float32"


@pytest.mark.parametrize("flag", ["avx512_bf16", "amx_bf16"])
def test_auto_is_bf16_where_the_cpu_computes_it_natively(flag):
    with process_options_set(auto_bf16=True):  # (the suite's conftest turns it off)
        assert resolve_precision("auto", CPU, NO_BF16 | {flag}) == "bfloat16"
        assert resolve_precision(None, CPU, NO_BF16 | {flag}) == "bfloat16"
    with process_options_set(auto_bf16=False):  # fp32 everywhere, on request
        assert resolve_precision("auto", CPU, NO_BF16 | {flag}) == "float32"
        assert resolve_precision("bfloat16", CPU, NO_BF16 | {flag}) == "bfloat16"  # explicit


def test_explicit_choices_are_kept_and_checked():
    for name in ("float32", "bfloat16", "float16", "int8"):
        assert resolve_precision(name, CPU, NO_BF16) == name
    with pytest.raises(
        ValueError, match=r"expected one of auto, float32, bfloat16, float16, int8, got 'fp8'"
    ):
        resolve_precision("fp8", CPU, NO_BF16)
    with pytest.raises(ValueError, match="dtype 'int8' runs on the CPU only, got device cuda"):
        resolve_precision("int8", torch.device("cuda"), NO_BF16)


@pytest.mark.usefixtures("auto_bf16")
def test_the_cpu_flags_decide_native_bf16_and_vnni(monkeypatch):
    simulate_cpu(monkeypatch, {"avx2", "amx_bf16", "amx_tile"})
    assert cpu_features.native_bf16()
    assert resolve_precision(None, CPU) == "bfloat16"
    simulate_cpu(monkeypatch, NO_BF16)
    assert not cpu_features.native_bf16()
    assert cpu_features.has_vnni()
    assert resolve_precision(None, CPU) == "float32"


def test_explicit_bf16_without_native_support_warns_with_the_measured_factor(monkeypatch, caplog):
    simulate_cpu(monkeypatch, NO_BF16)
    with caplog.at_level(logging.WARNING, logger="poolq.engine"):
        factor = warn_emulated_bf16("bfloat16", CPU, 64, 256)
    assert factor is not None and factor > 0
    (record,) = caplog.records
    assert f"ran {factor:.1f}x slower than fp32" in record.getMessage()
    assert "dtype 'auto' picks float32" in record.getMessage()
    caplog.clear()
    simulate_cpu(monkeypatch, {"avx512_bf16"})
    assert warn_emulated_bf16("bfloat16", CPU, 64, 256) is None  # native: nothing to say
    assert warn_emulated_bf16("float32", CPU, 64, 256) is None
    assert caplog.records == []


def test_profile_dtype_and_int8_floors_are_validated():
    ok = Profile.from_dict(
        {"models": {"m": {"dtype": "int8", "int8_floors": {"mean_cosine": 0.98}}}}
    )
    cfg = ok.model_config("m")
    assert cfg.dtype == "int8" and cfg.int8_floors.mean_cosine == 0.98
    assert cfg.int8_floors.min_cosine == 0.97  # defaults for the rest
    with pytest.raises(
        ValueError, match=r"model 'm': dtype: expected one of auto, .*int8, got 'int4'"
    ):
        Profile.from_dict({"models": {"m": {"dtype": "int4"}}})
    with pytest.raises(ValueError, match=r"model 'm': int8_floors: unknown keys \['cosine'\]"):
        Profile.from_dict({"models": {"m": {"int8_floors": {"cosine": 0.9}}}})
    with pytest.raises(ValueError, match="int8_floors: expected a table, got float"):
        Profile.from_dict({"models": {"m": {"int8_floors": 0.9}}})


@pytest.mark.slow
@pytest.mark.usefixtures("auto_bf16")
def test_load_model_default_precision_follows_the_cpu_flags(minilm, monkeypatch):
    from poolq.worker.engine.checkpoints.loader import ModelConfig, load_model

    simulate_cpu(monkeypatch, NO_BF16)
    model = load_model(ModelConfig(minilm, device="cpu"))
    assert (model.precision, model.dtype) == ("float32", torch.float32)
    simulate_cpu(monkeypatch, NO_BF16 | {"amx_bf16"})
    model = load_model(ModelConfig(minilm, device="cpu"))
    assert (model.precision, model.dtype) == ("bfloat16", torch.bfloat16)
    assert model.bf16_slowdown is None  # native: no warning, nothing measured
