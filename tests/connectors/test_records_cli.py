"""`tfhadoop records ...` through tfhadoop.cli.main and through the installed command."""
from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tfhadoop.cli import main
from tfhadoop.connectors.example import encode_example, encode_sequence_example
from tfhadoop.connectors.tfrecord import TFRecordReader
from tfhadoop.connectors.tfrecord_writer import write_records

TFHADOOP = str(Path(sys.executable).with_name("tfhadoop"))


@pytest.fixture()
def files(tmp_path):
    ex = [encode_example({"id": [i], "name": f"n{i}", "score": [0.25 * i]}) for i in range(30)]
    write_records(str(tmp_path / "part-0.tfrecord.gz"), ex[:20])
    write_records(str(tmp_path / "part-1.tfrecord"), ex[20:])
    (tmp_path / "_SUCCESS").write_bytes(b"")
    return tmp_path, ex


def _lines(capsys):
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def test_cat_prints_protobuf_json(files, capsys):
    d, ex = files
    assert main(["records", "cat", str(d / "part-*")]) == 0
    rows = _lines(capsys)
    assert len(rows) == 30
    feat = rows[7]["features"]["feature"]
    assert feat["id"] == {"int64List": {"value": ["7"]}}
    assert base64.b64decode(feat["name"]["bytesList"]["value"][0]) == b"n7"
    assert feat["score"]["floatList"]["value"] == [1.75]
    # A directory means its visible files; -n limits.
    assert main(["records", "head", "-n", "3", str(d)]) == 0
    assert [r["features"]["feature"]["id"]["int64List"]["value"] for r in _lines(capsys)] == [["0"], ["1"], ["2"]]


def test_cat_bytes_and_sequence_examples(tmp_path, capsys):
    p = tmp_path / "seq.tfrecord"
    recs = [encode_sequence_example({"u": [b"x"]}, {"steps": [[1, 2], [3]]}), b"\xff\x00not a proto"]
    write_records(str(p), recs)
    assert main(["records", "cat", "--record-type", "bytes", str(p)]) == 0
    assert _lines(capsys) == [{"len": len(r), "sha256": hashlib.sha256(r).hexdigest()} for r in recs]
    assert main(["records", "head", "-n", "1", str(p)]) == 0
    (row,) = _lines(capsys)
    assert row["featureLists"]["featureList"]["steps"]["feature"][1] == {"int64List": {"value": ["3"]}}
    assert main(["records", "cat", "--record-type", "Example", str(p)]) == 1
    assert "record at" in capsys.readouterr().err


def test_count_and_schema(files, capsys):
    d, _ = files
    assert main(["records", "count", "--per-file", str(d)]) == 0
    out = capsys.readouterr().out.split("\n")
    assert out[0].startswith("20\t") and out[1].startswith("10\t") and out[2] == "30"
    assert main(["records", "count", "--compression", "gzip", str(d / "part-0.tfrecord.gz")]) == 0
    assert capsys.readouterr().out.strip() == "20"
    assert main(["records", "schema", str(d)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["records"] == 30 and doc["record_type"] == "Example"
    assert {f["name"]: f["type"] for f in doc["arrow_schema"]} == {"id": "int64", "name": "string", "score": "float"}
    assert doc["parse_spec"]["features"]["id"] == {"type": "FixedLenFeature", "shape": [], "dtype": "int64"}


def test_verify_names_first_bad_file_and_offset(files, capsys):
    d, _ = files
    assert main(["records", "verify", str(d)]) == 0
    assert "OK" in capsys.readouterr().out
    raw = bytearray((d / "part-1.tfrecord").read_bytes())
    offsets = [o for o, _ in TFRecordReader(str(d / "part-1.tfrecord")).with_offsets()]
    raw[offsets[4] + 20] ^= 0x40  # data of record 4
    raw[offsets[7] + 2] ^= 0x01  # length of record 7
    (d / "part-1.tfrecord").write_bytes(bytes(raw))
    assert main(["records", "verify", str(d)]) == 1
    err = capsys.readouterr().err
    assert f"part-1.tfrecord: corrupted record at {offsets[4] + 12}" in err
    assert main(["records", "verify", "--skip-corrupt", str(d)]) == 1
    out = capsys.readouterr().out
    assert "skipped 2 damaged record(s)" in out and "28 good records" in out
    assert f"corrupted at {offsets[4] + 12}, corrupted at {offsets[7]}" in out
    assert main(["records", "count", "--skip-corrupt", str(d)]) == 0
    assert capsys.readouterr().out.strip() == "28"


def test_user_errors(tmp_path, capsys):
    assert main(["records", "count", str(tmp_path / "missing-*.tfrecord")]) == 1
    assert "no files match" in capsys.readouterr().err
    p = tmp_path / "trunc.tfrecord"
    write_records(str(p), [b"abc"] * 3)
    p.write_bytes(p.read_bytes()[:-2])
    assert main(["records", "count", str(p)]) == 1
    assert "truncated record at 38" in capsys.readouterr().err


def test_help_everywhere(capsys):
    for argv in (["records", "--help"], ["records", "cat", "--help"], ["records", "head", "--help"], ["records", "count", "--help"],
                 ["records", "schema", "--help"], ["records", "verify", "--help"], ["records", "index", "--help"]):
        with pytest.raises(SystemExit) as exc:
            main(argv)
        assert exc.value.code == 0
        assert "usage: tfhadoop records" in capsys.readouterr().out


def test_installed_command(files):
    d, ex = files
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    res = subprocess.run([TFHADOOP, "records", "cat", "--record-type", "bytes", str(d / "part-1.tfrecord")],
                         capture_output=True, text=True, env=env, timeout=120)
    assert res.returncode == 0, res.stderr
    assert [json.loads(line)["len"] for line in res.stdout.splitlines()] == [len(r) for r in ex[20:]]
    # Closing the pipe early is not an error.
    proc = subprocess.Popen([TFHADOOP, "records", "cat", str(d)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert proc.stdout and proc.stderr  # PIPEs
    proc.stdout.readline()
    proc.stdout.close()
    assert proc.wait(timeout=60) == 0
    assert b"Traceback" not in proc.stderr.read()
    res = subprocess.run([TFHADOOP, "records", "verify", str(d / "nope")], capture_output=True, text=True, env=env, timeout=120)
    assert res.returncode == 1 and "no files match" in res.stderr


def test_progress_bar_only_on_a_terminal(files, capsys, monkeypatch):
    d, _ = files
    assert main(["records", "verify", str(d / "part-1.tfrecord")]) == 0
    assert capsys.readouterr().err == ""
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    assert main(["records", "verify", str(d / "part-1.tfrecord")]) == 0
    err = capsys.readouterr().err
    assert "B/s" in err or "%" in err or "it/s" in err, err
    assert main(["records", "count", "--no-progress", str(d / "part-1.tfrecord")]) == 0
    assert capsys.readouterr().err == ""


def test_index_command(files, capsys):
    from tfhadoop.connectors.index import load_index

    d, ex = files
    assert main(["records", "index", "--per-record", str(d / "part-*")]) == 0
    assert "part-1.tfrecord.idx: 10 records" in capsys.readouterr().out
    assert load_index(str(d / "part-1.tfrecord")).record(3) == ex[23]
    assert load_index(str(d / "part-0.tfrecord.gz")).record(19) == ex[19]
    # the default: the hidden record-boundary index (compressed files are read whole: none)
    assert main(["records", "index", "--interval", "100", str(d / "part-*")]) == 0
    out = capsys.readouterr().out
    assert ".part-1.tfrecord.tfrindex: 10 records" in out and "part-0.tfrecord.gz: compressed" in out
    assert (d / ".part-1.tfrecord.tfrindex").is_file() and not (d / ".part-0.tfrecord.gz.tfrindex").exists()
    # Index files next to the data are not data.
    assert main(["records", "count", str(d)]) == 0
    assert capsys.readouterr().out.strip() == "30"
