"""Tests for ntputils.data.mnist: the official MNIST IDX files read with numpy."""

from __future__ import annotations

import gzip
import re

import numpy as np
import pytest

from ntputils import paths
from ntputils.data.corpora.readers import CorruptDataError
from ntputils.data.mnist import (
    MNIST_FILES,
    MNISTChecksumError,
    MNISTFileError,
    imbalanced_subset,
    load_mnist,
    read_idx,
)

REAL = paths.data_dir() / "mnist"


def _idx(array: np.ndarray) -> bytes:
    header = bytes([0, 0, 8, array.ndim]) + b"".join(int(n).to_bytes(4, "big") for n in array.shape)
    return header + array.astype(np.uint8).tobytes()


def test_read_idx_roundtrip_and_errors():
    a = np.arange(24, dtype=np.uint8).reshape(2, 3, 4)
    np.testing.assert_array_equal(read_idx(_idx(a)), a)
    with pytest.raises(ValueError, match="magic"):
        read_idx(b"\x01\x00\x08\x01" + bytes(8))
    with pytest.raises(ValueError, match="unsigned byte"):
        read_idx(b"\x00\x00\x0d\x01" + (1).to_bytes(4, "big") + bytes(4))
    with pytest.raises(ValueError, match="data bytes"):
        read_idx(_idx(a)[:-1])


def test_small_fixture_folder(tmp_path):
    images = np.random.default_rng(0).integers(0, 256, size=(12, 28, 28)).astype(np.uint8)
    labels = np.array([0, 1, 2, 3] * 3, dtype=np.uint8)
    img_name, lab_name = MNIST_FILES["train"]
    with pytest.raises(MNISTFileError, match=img_name):
        load_mnist("train", tmp_path)
    (tmp_path / img_name).write_bytes(gzip.compress(_idx(images)))
    with pytest.raises(MNISTFileError, match=lab_name):
        load_mnist("train", tmp_path, verify=False)
    (tmp_path / lab_name).write_bytes(gzip.compress(_idx(labels)))
    with pytest.raises(MNISTChecksumError, match="md5"):
        load_mnist("train", tmp_path)
    x, y = load_mnist("train", tmp_path, verify=False)
    np.testing.assert_array_equal(x, images)
    np.testing.assert_array_equal(y, labels)
    idx = imbalanced_subset(y, [0, 1, 3], [3, 2, 1], seed=0)
    assert y[idx].tolist() == [0, 0, 0, 1, 1, 3]
    np.testing.assert_array_equal(idx, imbalanced_subset(y, [0, 1, 3], [3, 2, 1], seed=0))
    with pytest.raises(ValueError, match="asked for 4"):
        imbalanced_subset(y, [0], [4])
    with pytest.raises(ValueError, match="unknown MNIST split"):
        load_mnist("valid", tmp_path)


@pytest.mark.skipif(not (REAL / MNIST_FILES["test"][0]).exists(), reason="shared MNIST files not present")
def test_real_mnist_test_split():
    x, y = load_mnist("test")  # md5-checked
    assert x.shape == (10000, 28, 28) and x.dtype == np.uint8
    assert y[:10].tolist() == [7, 2, 1, 0, 4, 1, 4, 9, 5, 9]
    assert np.bincount(y).tolist() == [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]


@pytest.mark.parametrize("damage", ["truncated", "not gzip", "not IDX"])
def test_a_corrupt_file_names_itself_and_the_data_setting(tmp_path, damage):
    """Without the md5 check, a truncated gzip (EOFError), a file that is no gzip (BadGzipFile) or a gzip of
    something else is an error naming the file and NTP_DATA_DIR, not a bare error from gzip."""
    img_name, lab_name = MNIST_FILES["test"]
    packed = gzip.compress(_idx(np.zeros((2, 28, 28), dtype=np.uint8)))
    damaged = {"truncated": packed[: len(packed) // 2], "not gzip": b"not a gzip file" * 8,
               "not IDX": gzip.compress(b"hello world")}[damage]
    (tmp_path / img_name).write_bytes(damaged)
    (tmp_path / lab_name).write_bytes(gzip.compress(_idx(np.zeros(2, dtype=np.uint8))))
    with pytest.raises(CorruptDataError, match=f"MNIST file {re.escape(str(tmp_path / img_name))} .*"
                                              f"{paths.DATA_ENV}"):
        load_mnist("test", tmp_path, verify=False)
