"""The piiner-redact command line, run in-process with the regex detector (no model needed): text, JSONL and stdin
input, one output line per input record, per-line errors with line numbers, exit status."""

import io
import json
import subprocess
import sys

import pytest

import piiner.deid.cli as cli
from conftest import REPO_ROOT


def run(argv, capsys, stdin_bytes=None, monkeypatch=None):
    if stdin_bytes is not None:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin_bytes)))
    code = cli.main(["--detector", "regex", "--no-progress"] + argv)
    captured = capsys.readouterr()
    return code, [json.loads(line) for line in captured.out.splitlines()], captured.err


def test_text_file_one_record_per_line_with_invalid_utf8_reported_by_line(tmp_path, capsys):
    path = tmp_path / "notes.txt"
    path.write_bytes(b"mail a@b.com now\r\nbad \xff\xfe line 123-45-6789\n\nssn 123-45-6789\n")
    code, out, err = run([str(path)], capsys)
    assert code == 1
    assert len(out) == 4
    assert out[0] == {"redacted_text": "mail [EMAIL] now", "entities": [
        {"type": "EMAIL", "tier": 2, "score": 1.0, "start": 5, "end": 12, "new_start": 5, "new_end": 12,
         "replacement": "[EMAIL]"}]}
    assert out[1]["line"] == 2 and "invalid UTF-8" in out[1]["error"] and "123-45-6789" not in json.dumps(out[1])
    assert out[2] == {"redacted_text": "", "entities": []}
    assert out[3]["redacted_text"] == "ssn [SSN]"
    assert "line 2: invalid UTF-8" in err and "1 line(s) FAILED" in err


def test_jsonl_passes_fields_through_and_never_writes_the_original_text(tmp_path, capsys):
    path = tmp_path / "records.jsonl"
    rows = [{"id": 1, "body": "ssn 123-45-6789", "meta": {"k": [1, 2]}}, {"id": 2, "body": "nothing"}]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n")
    code, out, err = run([str(path), "--text-field", "body", "--mode", "mask"], capsys)
    assert code == 0
    assert out == [
        {"id": 1, "meta": {"k": [1, 2]}, "redacted_text": "ssn ***********", "entities": [
            {"type": "SSN", "tier": 1, "score": 1.0, "start": 4, "end": 15, "new_start": 4, "new_end": 15,
             "replacement": "***********"}]},
        {"id": 2, "redacted_text": "nothing", "entities": []},
    ]
    assert "1 blank JSONL lines skipped" in err


def test_detect_only_keeps_text_and_words(tmp_path, capsys):
    path = tmp_path / "in.jsonl"
    path.write_text(json.dumps({"text": "write to a@b.com", "id": "x"}) + "\n")
    code, out, _ = run([str(path), "--detect-only"], capsys)
    assert code == 0
    assert out == [{"text": "write to a@b.com", "id": "x", "entities": [
        {"type": "EMAIL", "tier": 2, "score": 1.0, "start": 9, "end": 16, "word": "a@b.com"}]}]


def test_bad_jsonl_lines_are_reported_and_the_rest_processed(tmp_path, capsys):
    path = tmp_path / "in.jsonl"
    path.write_text('{"text": "a@b.com"}\nnot json\n[1, 2]\n{"id": 3}\n{"text": 5}\n{"text": "ok"}\n')
    code, out, err = run([str(path)], capsys)
    assert code == 1 and len(out) == 6
    assert [o.get("line") for o in out] == [None, 2, 3, 4, 5, None]
    assert "not valid JSON" in out[1]["error"] and "must be an object" in out[2]["error"]
    assert "no 'text' field" in out[3]["error"] and "must be a string" in out[4]["error"]
    assert out[5]["redacted_text"] == "ok" and "4 line(s) FAILED" in err


def test_stdin_auto_detects_jsonl_and_key_env_makes_surrogates_reproducible(capsys, monkeypatch):
    monkeypatch.setenv("PIINER_TEST_KEY", "s3cret")
    stdin = b'{"text": "ssn 123-45-6789"}\n{"text": "again 123-45-6789"}\n'
    code, out, _ = run(["--mode", "surrogate", "--key-env", "PIINER_TEST_KEY", "-"], capsys, stdin, monkeypatch)
    code2, out2, _ = run(["--mode", "surrogate", "--key-env", "PIINER_TEST_KEY"], capsys, stdin, monkeypatch)
    assert code == code2 == 0
    fakes = [o["entities"][0]["replacement"] for o in out + out2]
    assert len(set(fakes)) == 1 and fakes[0] != "123-45-6789"


def test_filters_and_bad_flags(tmp_path, capsys):
    path = tmp_path / "in.txt"
    path.write_text("a@b.com 123-45-6789\n")
    _, out, _ = run([str(path), "--min-tier", "1"], capsys)
    assert out[0]["redacted_text"] == "a@b.com [SSN]"
    _, out, err = run([str(path), "--types", "EMAIL"], capsys)
    assert out[0]["redacted_text"] == "[EMAIL] 123-45-6789" and "type_not_selected 1" in err
    for argv, message in [(["--types", "NOPE"], "unknown PII type"), (["--key-env", "PIINER_UNSET_VAR_X"], "unset"),
                          (["--threshold", "2"], "TIER=SCORE"), (["missing.txt"], "not found")]:
        with pytest.raises(SystemExit) as exit_info:
            cli.main(["--detector", "regex", str(path)] + argv if argv[0] != "missing.txt"
                     else ["--detector", "regex", str(tmp_path / "missing.txt")])
        assert exit_info.value.code == 2 and message in capsys.readouterr().err


def test_model_is_required_without_regex_detector(capsys):
    with pytest.raises(SystemExit):
        cli.main(["-"])
    assert "--model" in capsys.readouterr().err


def test_cli_runs_as_a_script_on_stdin():
    proc = subprocess.run([sys.executable, "-m", "piiner.deid", "--detector", "regex", "--mode", "hash", "--key-env", "K"],
                          input=b"ip 10.0.0.1\n", capture_output=True, cwd=REPO_ROOT, env={"K": "k", "PATH": ""},
                          timeout=120)
    assert proc.returncode == 0, proc.stderr.decode()
    record = json.loads(proc.stdout)
    assert record["redacted_text"].startswith("ip [IP_ADDRESS:") and "10.0.0.1" not in proc.stdout.decode()
