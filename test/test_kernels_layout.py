"""kernels.layout: the one declared way to lay out packed blobs."""
import numpy as np
import pytest

from rbd_estimator.kernels import Layout, Packer


def test_header_slots_in_order_and_extend_keeps_them():
    h = Layout("NB FLOAT IMUB")
    assert h.slots == (0, 1, 2) and h.names == ("NB", "FLOAT", "IMUB") and h.size == len(h) == 3
    assert all(type(s) is int for s in h.slots)
    assert h.FLOAT == 1 and h.offset["IMUB"] == 2
    g = h.extend("NJ NH")
    assert g.slots == (0, 1, 2, 3, 4) and g.names[:3] == h.names
    with pytest.raises(AttributeError, match="NOPE"):
        h.NOPE


def test_record_widths():
    r = Layout([("S_", 36), ("AXIS", 3), "FLAG", ("ET", 9)])
    assert r.slots == (0, 36, 39, 40) and r.size == 49 and r.width["ET"] == 9
    assert r.extend([("MORE", 2)]).slots == (0, 36, 39, 40, 49)
    with pytest.raises(ValueError, match="record"):
        r.header({})


def test_names_twice_refused():
    with pytest.raises(ValueError, match="NB"):
        Layout("NB FLOAT NB")
    with pytest.raises(ValueError, match="NB"):
        Layout("NB").extend("NB")


def test_check_catches_a_misordered_constant():
    h = Layout("A B C")
    Layout.check(h, {"X_A": 0, "X_B": 1, "X_C": 2}, "X_")
    with pytest.raises(AssertionError, match="X_B"):
        h.check({"X_A": 0, "X_B": 2, "X_C": 1}, "X_")


def test_packer_header_and_offsets():
    h = Layout("N OFF WORK")
    ip = Packer(np.int64, header=h)
    off = ip.add([[1, 2], [3, 4]])
    w = ip.reserve(3)
    assert (off, w) == (3, 7)
    out = ip.array(dict(N=2, OFF=off, WORK=w))
    assert out.dtype == np.int64 and out.flags.c_contiguous
    np.testing.assert_array_equal(out, [2, 3, 7, 1, 2, 3, 4, 0, 0, 0])
    with pytest.raises(KeyError, match="WORK"):
        ip.array(dict(N=2, OFF=off))
    with pytest.raises(ValueError, match="EXTRA"):
        ip.array(dict(N=2, OFF=off, WORK=w, EXTRA=1))
    fp = Packer(np.float64)
    assert fp.array().shape == (0,) and fp.add([1.5]) == 0 and fp.array().dtype == np.float64
