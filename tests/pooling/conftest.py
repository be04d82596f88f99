import pytest
import torch


@pytest.fixture(autouse=True)
def _inference_mode():
    # The engine runs heads and poolers under inference mode; so do these tests.
    with torch.inference_mode():
        yield
