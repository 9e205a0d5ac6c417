"""Shared fixtures: every test run gets its own topic cache so results never leak between runs."""

import pytest


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("SIPT_LAB_CACHE", str(tmp_path_factory.getbasetemp() / "cache"))
