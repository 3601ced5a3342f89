"""Shared pytest fixtures."""

import pytest
import torch


@pytest.fixture(autouse=True)
def one_torch_thread():
    """Run torch single-threaded in tests: the models here are tiny, and one thread is both the
    fastest choice for them and immune to other processes competing for the two cores."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
