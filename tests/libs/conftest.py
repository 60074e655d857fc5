import os

import pytest

from libs_cli import BINARY


@pytest.fixture(autouse=True)
def binary():
    if not BINARY or not os.path.isabs(BINARY):
        pytest.fail("set IPCLAB_BIN to the absolute path of the ipclab binary")
