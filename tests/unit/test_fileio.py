import json
import stat

from sipt_lab.core.fileio import write_json_atomic, write_text_atomic


def test_atomic_write_leaves_one_complete_file_with_normal_permissions(tmp_path):
    plain = tmp_path / "plain.txt"
    plain.write_text("x")  # what open() gives a new file under the current umask
    target = tmp_path / "deep" / "result.json"
    write_json_atomic(target, {"a": 1})
    write_json_atomic(target, {"a": 2})  # replaces, never appends
    assert json.loads(target.read_text()) == {"a": 2}
    assert [p.name for p in target.parent.iterdir()] == ["result.json"]  # no temporary left over
    assert stat.S_IMODE(target.stat().st_mode) == stat.S_IMODE(plain.stat().st_mode)


def test_text_is_utf8(tmp_path):
    write_text_atomic(tmp_path / "t.txt", "Möbius")
    assert (tmp_path / "t.txt").read_bytes() == "Möbius".encode()
