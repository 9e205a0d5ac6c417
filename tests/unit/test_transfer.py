"""models.transfer: host arrays onto a device in one copy per dtype, refilled in place."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from sipt_lab.models.transfer import DeviceArrays, to_device


def test_device_arrays_keep_each_array_and_refill_in_place():
    arrays = {"ids": np.arange(6).reshape(2, 3), "bias": np.array([0.0, -np.inf], np.float32), "n": np.array([7])}
    moved = DeviceArrays(arrays, torch.device("cpu"))
    assert set(moved) == {"ids", "bias", "n"}
    for name, array in arrays.items():
        assert moved[name].shape == array.shape and moved[name].dtype == torch.as_tensor(array).dtype
        np.testing.assert_array_equal(moved[name].numpy(), array)
    ids = moved["ids"]
    moved.refill({"ids": np.full((2, 3), 9), "bias": np.array([1.0, 2.0], np.float32), "n": np.array([3])})
    assert moved["ids"] is ids and ids.tolist() == [[9, 9, 9], [9, 9, 9]]  # the same tensor, new values
    assert moved["bias"].tolist() == [1.0, 2.0] and moved["n"].tolist() == [3]
    with pytest.raises(ValueError, match="names, shapes and dtypes unchanged"):
        moved.refill({"ids": np.zeros((2, 3), np.int32), "bias": np.zeros(2, np.float32), "n": np.array([1])})
    with pytest.raises(ValueError, match="names, shapes and dtypes unchanged"):
        moved.refill({"ids": np.zeros((3, 2), np.int64), "bias": np.zeros(2, np.float32), "n": np.array([1])})


def test_to_device_moves_arrays_of_one_dtype():
    first, second = to_device([np.arange(4), np.arange(6).reshape(2, 3)], torch.device("cpu"))
    assert first.tolist() == [0, 1, 2, 3] and second.shape == (2, 3)
