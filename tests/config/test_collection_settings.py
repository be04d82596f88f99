"""The profile's [collection] table: defaults, every key, and one-line errors naming the key."""

import pytest

from poolq.sinks.collection_settings import CollectionSettings
from poolq.worker.config.profile import DEFAULT_PROFILE, Profile


def test_the_default_profile_stores_collections_as_qdrant_advises():
    s = DEFAULT_PROFILE.collection
    assert (s.multivector_on_disk, s.multivector_hnsw, s.multivector_datatype) == (
        True,
        False,
        "float32",
    )
    assert (s.dense_quantization, s.dense_on_disk, s.shard_number) == ("none", False, None)


def test_every_key_is_read():
    table = {
        "multivector_on_disk": False,
        "multivector_hnsw": True,
        "multivector_datatype": "float16",
        "dense_quantization": "int8",
        "dense_on_disk": True,
        "shard_number": 4,
        "replication_factor": 2,
        "write_consistency_factor": 2,
    }
    profile = Profile.from_dict({"collection": table})
    assert profile.collection.to_dict() == table
    assert profile.vectors == DEFAULT_PROFILE.vectors


def test_storage_settings_are_not_part_of_the_profile_version():
    from poolq.worker.config.versions import profile_version

    prints = {m: "f" for m in DEFAULT_PROFILE.models}
    tuned = Profile.from_dict({"collection": {"multivector_datatype": "float16"}})
    assert profile_version(tuned, prints) == profile_version(DEFAULT_PROFILE, prints)


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"multivector_datatype": "int4"}, "multivector_datatype: expected one of 'float32', 'float16', 'uint8', got 'int4'"),
        ({"dense_quantization": "pq"}, "dense_quantization: expected one of 'none', 'int8', got 'pq'"),
        ({"multivector_on_disk": "yes"}, "multivector_on_disk: expected true or false, got 'yes'"),
        ({"shard_number": 0}, "shard_number: expected an integer >= 1, got 0"),
        ({"replication_factor": True}, "replication_factor: expected an integer >= 1, got True"),
        ({"on_disk": True}, "unknown keys ['on_disk']"),
        ("float16", "[collection]: expected a table of settings, got str"),
    ],
)  # fmt: skip
def test_bad_settings_name_the_key(table, message):
    with pytest.raises(ValueError) as err:
        Profile.from_dict({"collection": table})
    assert str(err.value).startswith("profile: [collection]")
    assert message in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(ValueError):
        CollectionSettings.from_dict(table)
