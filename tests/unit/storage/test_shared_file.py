"""A segment's file shared with the answers sending from it: closed by the last holder, never before."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from odradek.storage.shared_file import ClosedFileError, SharedFile


def is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def test_the_file_stays_open_until_the_last_holder_lets_go(tmp_path: Path) -> None:
    fd = os.open(tmp_path / "segment.log", os.O_RDWR | os.O_CREAT)
    file = SharedFile(fd)
    answer = file.hold()
    file.release()  # the segment closes
    assert is_open(fd) and answer.fd == fd
    answer.release()
    assert not is_open(fd) and file.fd == -1


def test_a_file_closed_by_its_last_holder_cannot_be_held_again(tmp_path: Path) -> None:
    file = SharedFile(os.open(tmp_path / "segment.log", os.O_RDWR | os.O_CREAT))
    file.release()
    with pytest.raises(ClosedFileError):
        file.hold()
