"""Shared fixtures."""

import pytest
from xdsl.context import Context

from charon_ir.testing import make_context


@pytest.fixture
def ctx() -> Context:
    return make_context()
