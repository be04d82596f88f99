"""The worker's event loop setting (``worker/config/event_loop.py``): uvloop where installed,
asyncio's own on request, a clear refusal when uvloop is asked for and missing."""

from __future__ import annotations

import asyncio
import importlib.util

import pytest

from poolq.worker.config import event_loop
from poolq.worker.config.event_loop import chosen_loop, event_loop_policy
from poolq.worker.config.settings import Settings, load_settings

uvloop = pytest.importorskip("uvloop")


def test_auto_runs_new_loops_on_uvloop_and_puts_the_policy_back():
    before = asyncio.get_event_loop_policy()
    with event_loop_policy("auto") as name:
        assert name == "uvloop"
        loop = asyncio.new_event_loop()
        try:
            assert isinstance(loop, uvloop.Loop)
        finally:
            loop.close()
    assert asyncio.get_event_loop_policy() is before


def test_asyncio_keeps_asyncios_own_loop():
    with event_loop_policy("asyncio") as name:
        assert name == "asyncio"
        loop = asyncio.new_event_loop()
        try:
            assert not isinstance(loop, uvloop.Loop)
        finally:
            loop.close()


def test_auto_without_uvloop_falls_back_and_uvloop_without_it_is_refused(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        event_loop.importlib.util,
        "find_spec",
        lambda name, *a: None if name == "uvloop" else real(name, *a),
    )
    assert chosen_loop("auto") == "asyncio"
    with pytest.raises(ValueError, match=r"event_loop = 'uvloop': uvloop is not installed"):
        Settings(event_loop="uvloop")


def test_the_setting_is_checked_and_read_from_the_environment(monkeypatch):
    with pytest.raises(
        ValueError, match=r"^event_loop: expected one of auto, uvloop, asyncio, got 'tokio'$"
    ):
        Settings(event_loop="tokio")
    monkeypatch.setenv("POOLQ_EVENT_LOOP", "asyncio")
    assert load_settings().event_loop == "asyncio"
    monkeypatch.setenv("POOLQ_EVENT_LOOP", "")
    assert load_settings().event_loop == "auto"
