"""The two-hosts rig's one name of the whole machine, sshd's privilege separation folder
(netpair.PrivsepFolder), on a folder of the test's own: made only when missing, kept while any
rig holds it, removed by the last one out only when a rig made it, never when it was there before."""

import os

from ipclab_report.netpair import PrivsepFolder


def test_made_when_missing_and_removed_by_the_last_rig_out(tmp_path):
    path = str(tmp_path / "sshd")
    a, b = PrivsepFolder(path), PrivsepFolder(path)
    a.acquire()
    assert os.path.isdir(path) and os.stat(path).st_mode & 0o777 == 0o755
    b.acquire()
    a.release()  # b's sshd still needs it
    assert os.path.isdir(path)
    b.release()
    assert not os.path.exists(path)


def test_a_folder_there_before_is_never_removed(tmp_path):
    path = tmp_path / "sshd"
    path.mkdir(mode=0o755)
    rig = PrivsepFolder(str(path))
    rig.acquire()
    rig.release()
    assert path.is_dir() and list(path.iterdir()) == []  # untouched: no mark was ever put in it


def test_a_folder_a_killed_rig_left_is_removed_by_the_next(tmp_path):
    path = str(tmp_path / "sshd")
    killed = PrivsepFolder(path)
    killed.acquire()
    os.close(killed.fd)  # its process died: its lock went with its descriptors
    nxt = PrivsepFolder(path)
    nxt.acquire()
    nxt.release()
    assert not os.path.exists(path)
