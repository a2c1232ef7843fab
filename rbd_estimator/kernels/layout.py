"""The one way to lay out packed blobs for compiled kernels: :class:`Layout` names the fields of a
flat array, :class:`Packer` concatenates arrays into a blob.

A compiled kernel reads its constants and work from a few flat arrays (an integer blob ``ip``, a
float blob ``fp``, a work array ``w``, or per-body records) at offsets, never through views or
Python objects. Two things describe such arrays:

* a **header**: ``ip[slot]`` holds a size, a flag, or the offset of an array in ``ip``, ``fp`` or
  ``w``. ``KIN = Layout("NB FLOAT IMUB …")`` numbers the slots 0, 1, 2, … in order;
* a **record**: consecutive fields of given widths in a per-body (or per-cluster) block,
  ``Layout([("S_", 36), ("AXIS", 3), …])``; ``record.size`` is the block's length.

Kernels index with plain module-level ``int`` constants, which numba compiles as literals (a
lookup in a Python object would not be). A module makes them from its layout in one explicit
statement and lets the layout check them::

    KIN = Layout("NB FLOAT IMUB")
    K_NB, K_FLOAT, K_IMUB = KIN.slots          # the offsets, in the order of the names
    KIN.check(globals(), "K_")                 # every K_<name> equals its slot (catches a misorder)

A header that starts with another one's slots (the structured tick's header starts with the forward
kinematics' slots, which its kernels read) is ``KIN.extend("NJ NH …")``.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np

__all__ = ["Layout", "Packer"]


def _fields(fields: str | Iterable) -> list:
    """``[(name, width)]`` from whitespace-separated names (width 1) or ``(name, width)`` pairs."""
    if isinstance(fields, str):
        return [(n, 1) for n in fields.split()]
    return [(f, 1) if isinstance(f, str) else (f[0], int(f[1])) for f in fields]


class Layout:
    """Named fields at consecutive offsets of a flat array (see the module docstring).

    Args:
        fields: whitespace-separated names (one slot each: a header), or a sequence of names and
            ``(name, width)`` pairs (a record); names must be unique, widths non-negative.

    ``layout.offset[name]`` (or the attribute ``layout.<name>``) is a field's offset,
    ``layout.width[name]`` its width; :attr:`names` lists the names in order, :attr:`size` is the
    total length."""

    def __init__(self, fields: str | Iterable):
        items = _fields(fields)
        self.names: tuple = tuple(n for n, _ in items)
        self.width: dict = dict(items)
        if len(self.width) != len(self.names):
            dup = sorted({n for n in self.names if self.names.count(n) > 1})
            raise ValueError(f"layout fields named twice: {dup}")
        bad = [n for n, s in items if s < 0]
        if bad:
            raise ValueError(f"layout fields of negative width: {bad}")
        self.offset: dict = {}
        o = 0
        for n, s in items:
            self.offset[n] = o
            o += s
        self.size: int = o

    def __getattr__(self, name: str) -> int:
        try:
            return self.__dict__["offset"][name]
        except KeyError:
            raise AttributeError(f"layout has no field {name!r}") from None

    def __len__(self) -> int:
        return self.size

    def __repr__(self) -> str:
        return f"Layout({', '.join(f'{n}:{self.width[n]}' for n in self.names)})"

    @property
    def slots(self) -> tuple:
        """The fields' offsets (plain ``int``) in the order of :attr:`names`, for the module constants."""
        return tuple(self.offset[n] for n in self.names)

    def extend(self, fields: str | Iterable) -> "Layout":
        """A layout with this one's fields first (same offsets), then ``fields``."""
        return Layout([(n, self.width[n]) for n in self.names] + _fields(fields))

    def check(self, namespace: Mapping, prefix: str = "") -> None:
        """Raise ``AssertionError`` unless ``namespace[prefix + name]`` is the offset of every field
        (call it with the module's ``globals()`` after assigning the constants)."""
        wrong = [f"{prefix}{n}" for n in self.names if namespace.get(prefix + n) != self.offset[n]]
        assert not wrong, f"constants that do not match their layout: {wrong}"

    def header(self, values: Mapping) -> np.ndarray:
        """The header (int64, one entry per slot) holding ``values[name]`` in every slot. Raises
        ``KeyError`` naming the slots without a value, ``ValueError`` for a record (widths ≠ 1) or
        for names that are no slot."""
        if any(s != 1 for s in self.width.values()):
            raise ValueError(f"{self!r} is a record, not a header")
        missing = [n for n in self.names if n not in values]
        if missing:
            raise KeyError(f"no value for header slots {missing}")
        extra = sorted(set(values) - set(self.names))
        if extra:
            raise ValueError(f"values for names that are no header slot: {extra}")
        return np.array([values[n] for n in self.names], dtype=np.int64)


class Packer:
    """Concatenates arrays into one flat blob and remembers their offsets.

    Args:
        dtype: the blob's element type (``np.int64`` for ``ip``, ``np.float64`` for ``fp``, ``w``).
        header: a :class:`Layout` whose slots open the blob (zeros until :meth:`array` fills them).
    """

    def __init__(self, dtype, header: Layout | None = None):
        self.dtype, self.parts, self.n = np.dtype(dtype), [], 0
        self.layout = header
        if header is not None:
            self.reserve(header.size)

    def add(self, arr) -> int:
        """Append ``arr`` (flattened, converted to the blob's type); returns its offset."""
        a = np.ascontiguousarray(np.asarray(arr, dtype=self.dtype).reshape(-1))
        off = self.n
        self.parts.append(a)
        self.n += a.size
        return off

    def reserve(self, size: int) -> int:
        """Append ``size`` zeros (work space, or entries filled later); returns their offset."""
        return self.add(np.zeros(int(size), dtype=self.dtype))

    def array(self, header: Mapping | None = None) -> np.ndarray:
        """The blob (a new contiguous array); with ``header`` (name → value), the header's slots
        filled (:meth:`Layout.header`)."""
        out = np.concatenate(self.parts) if self.parts else np.zeros(0, self.dtype)
        out = np.ascontiguousarray(out, dtype=self.dtype)
        if header is not None:
            if self.layout is None:
                raise ValueError("this packer has no header layout")
            out[:self.layout.size] = self.layout.header(header)
        return out
