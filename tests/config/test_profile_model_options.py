"""Profile model options: every ModelConfig field can be set from TOML, checked with a clear error."""

from __future__ import annotations

import tomllib
from dataclasses import fields

import pytest

from poolq.worker.config.profile import Profile
from poolq.worker.engine.checkpoints.description import ModelConfig

TOML = """
[vectors]
dense = { model = "/models/qwen3", task = "embed", dimensions = 256 }
sparse = { model = "/models/splade", task = "sparse" }

[models."/models/qwen3"]
is_matryoshka = true
matryoshka_dims = [1024, 512, 256]
pooling = "LAST"

[models."/models/splade"]
splade_mode = "sum"
splade_remove_special = true
"""


def test_options_reach_the_model_config():
    profile = Profile.from_dict(tomllib.loads(TOML))
    qwen = profile.model_config("/models/qwen3")
    assert (qwen.is_matryoshka, qwen.matryoshka_dims, qwen.pooling) == (
        True,
        (1024, 512, 256),
        "LAST",
    )
    splade = profile.model_config("/models/splade")
    assert (splade.splade_mode, splade.splade_remove_special) == ("sum", True)


def test_every_model_config_field_is_an_option():
    names = {f.name for f in fields(ModelConfig)} - {"model"}
    assert {"splade_mode", "is_matryoshka", "matryoshka_dims"} <= names
    for name in names:  # known: never refused as an unknown option
        try:
            Profile.from_dict({"models": {"m": {name: None}}})
        except ValueError as exc:
            assert "unknown options" not in str(exc), name


@pytest.mark.parametrize(
    ("opts", "message"),
    [
        ({"splade_mode": "avg"}, "splade_mode: expected one of ['max', 'sum'], got 'avg'"),
        ({"is_matryoshka": "yes"}, "is_matryoshka: expected true or false"),
        ({"matryoshka_dims": [256, 0]}, "matryoshka_dims: expected a list of positive integers"),
        ({"pooling": "max"}, "pooling: expected one of ['CLS', 'MEAN', 'LAST']"),
        ({"no_such": 1}, "unknown options ['no_such']"),
    ],
)
def test_bad_options_name_the_model_and_the_key(opts, message):
    with pytest.raises(ValueError, match="profile: model 'm'") as err:
        Profile.from_dict({"models": {"m": opts}})
    assert message in str(err.value)
