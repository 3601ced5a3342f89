"""MNIST from the four official gzip IDX files, read with numpy (no torchvision).

Paper B (App. A.4, Fig. 9) trains a 3-layer CNN on an imbalanced subset of MNIST: two majority classes
of 100 training images and two minority classes of 10. The shared data folder holds the original
release files (``<data root>/mnist``, md5-identical to the official ones; ``mnist/README.md``).

IDX format: a 4-byte magic ``0x0000 08 nd`` (``08`` = unsigned bytes, ``nd`` = number of dimensions),
then ``nd`` big-endian uint32 sizes, then the data in C order. :func:`read_idx` parses it;
:func:`load_mnist` returns one split as ``(images [n, 28, 28] uint8, labels [n] uint8)`` after checking
the md5 of every gzip file; :func:`imbalanced_subset` draws the per-class training images of Fig. 9.
"""

from __future__ import annotations

import gzip
import hashlib
import zlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ntputils import paths
from ntputils.data.corpora.readers import CorruptDataError

MNIST_DIR = "mnist"
#: md5 of the gzip files (the official values; ``shared/data/mnist/README.md``).
MNIST_MD5 = {
    "train-images-idx3-ubyte.gz": "f68b3c2dcbeaaa9fbdd348bbdeb94873",
    "train-labels-idx1-ubyte.gz": "d53e105ee54ea40749a09fcbcd1e9432",
    "t10k-images-idx3-ubyte.gz": "9fb629c4189551a2d022fa330f9573f3",
    "t10k-labels-idx1-ubyte.gz": "ec29112dd5afa0611ce80d1b7f02629c",
}
MNIST_FILES = {"train": ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"),
               "test": ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")}


class MNISTFileError(FileNotFoundError):
    """An MNIST file is missing (the message names it and the data setting)."""


class MNISTChecksumError(ValueError):
    """An MNIST gzip file does not have the official md5."""


def read_idx(data: bytes) -> np.ndarray:
    """Parse an (uncompressed) IDX file of unsigned bytes into an array of its declared shape.

    Raises ``ValueError`` for a wrong magic number, a non-byte data type or a size mismatch.
    """
    if len(data) < 4 or data[0] != 0 or data[1] != 0:
        raise ValueError("not an IDX file: the magic number must start with two zero bytes")
    if data[2] != 0x08:
        raise ValueError(f"IDX data type 0x{data[2]:02x} is not unsigned byte (0x08)")
    ndim = data[3]
    header = 4 + 4 * ndim
    if ndim < 1 or len(data) < header:
        raise ValueError(f"IDX header declares {ndim} dimensions but the file is {len(data)} bytes")
    shape = tuple(int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim))
    n = int(np.prod(shape))
    if len(data) - header != n:
        raise ValueError(f"IDX shape {shape} needs {n} data bytes, the file has {len(data) - header}")
    return np.frombuffer(data, dtype=np.uint8, offset=header).reshape(shape)


def _read_file(path: Path, verify: bool) -> np.ndarray:
    """The IDX array of one gzip file; a file that cannot be read, decompressed or parsed is a
    :class:`~ntputils.data.corpora.readers.CorruptDataError` naming it and ``NTP_DATA_DIR``."""
    try:
        raw = path.read_bytes()
        expected = MNIST_MD5.get(path.name) if verify else None
        got = hashlib.md5(raw).hexdigest() if expected else None  # noqa: S324 - the official MNIST digest
        if got != expected:
            raise MNISTChecksumError(f"{path}: md5 {got} differs from the official {expected}")
        return read_idx(gzip.decompress(raw))
    except MNISTChecksumError:
        raise
    except (OSError, EOFError, zlib.error, ValueError) as err:  # BadGzipFile is an OSError
        raise CorruptDataError(f"MNIST file {path} cannot be read ({type(err).__name__}: {err}); restore it "
                               "from the official release (mnist/README.md), or set "
                               f"{paths.DATA_ENV} to an intact copy of the data folder") from err


def load_mnist(split: str = "train", folder: str | Path | None = None, verify: bool = True
               ) -> tuple[np.ndarray, np.ndarray]:
    """``(images [n, 28, 28] uint8, labels [n] uint8)`` of the MNIST ``split`` ("train" or "test").

    ``folder`` defaults to ``$NTP_DATA_DIR/mnist``. Both files of the split must exist (a missing one
    raises :class:`MNISTFileError` naming it, before anything is read); with ``verify`` their md5 is
    checked against the official values (:class:`MNISTChecksumError`). A file that cannot be decompressed
    or parsed (without ``verify``) is a :class:`~ntputils.data.corpora.readers.CorruptDataError` naming it.

    The imbalanced MNIST of Paper B, App. A.4, Fig. 9.
    """
    if split not in MNIST_FILES:
        raise ValueError(f"unknown MNIST split {split!r}; valid: {sorted(MNIST_FILES)}")
    root = Path(folder).expanduser() if folder is not None else paths.data_dir() / MNIST_DIR
    files = [root / name for name in MNIST_FILES[split]]
    missing = [f.name for f in files if not f.exists()]
    if missing:
        raise MNISTFileError(f"MNIST file(s) {', '.join(missing)} not found in {root}; set {paths.DATA_ENV} "
                             f"to the data folder that holds {MNIST_DIR}/ (the four *-ubyte.gz files)")
    images, labels = (_read_file(f, verify) for f in files)
    if images.ndim != 3 or labels.ndim != 1 or images.shape[0] != labels.shape[0]:
        raise ValueError(f"MNIST {split}: images {images.shape} and labels {labels.shape} do not match")
    return images, labels


def imbalanced_subset(labels: np.ndarray, classes: Sequence[int], per_class: Sequence[int], seed: int = 0
                      ) -> np.ndarray:
    """Indices of ``per_class[i]`` images of class ``classes[i]`` each, drawn without replacement.

    Ordered class by class (``classes`` order), each class's draw sorted by index; deterministic in
    ``seed``. Paper B Fig. 9: classes Maj1, Maj2, Min1, Min2 with 100, 100, 10, 10 images.
    """
    if len(classes) != len(per_class):
        raise ValueError(f"{len(classes)} classes but {len(per_class)} class sizes")
    if len(set(classes)) != len(classes):
        raise ValueError(f"classes must be distinct, got {list(classes)}")
    rng = np.random.default_rng(seed)
    out = []
    for c, k in zip(classes, per_class, strict=True):
        pool = np.flatnonzero(np.asarray(labels) == c)
        if k < 1 or k > pool.size:
            raise ValueError(f"class {c}: asked for {k} images, {pool.size} available")
        out.append(np.sort(rng.choice(pool, size=k, replace=False)))
    return np.concatenate(out)
