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


def test_lines_format_one_record_per_line_with_invalid_utf8_reported_by_line(tmp_path, capsys):
    path = tmp_path / "notes.txt"
    path.write_bytes(b"mail a@b.com now\r\nbad \xff\xfe line 123-45-6789\n\nssn 123-45-6789\n")
    code, out, err = run([str(path), "--format", "lines"], capsys)
    assert code == 1
    assert len(out) == 4
    assert out[0] == {"redacted_text": "mail [EMAIL] now", "entities": [
        {"type": "EMAIL", "tier": 2, "score": 1.0, "start": 5, "end": 12, "new_start": 5, "new_end": 12,
         "replacement": "[EMAIL]"}]}
    assert out[1]["line"] == 2 and "invalid UTF-8" in out[1]["error"] and "123-45-6789" not in json.dumps(out[1])
    assert out[2] == {"redacted_text": "", "entities": []}
    assert out[3]["redacted_text"] == "ssn [SSN]"
    assert "record 2: invalid UTF-8" in err and "1 record(s) FAILED" in err


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
    assert out[5]["redacted_text"] == "ok" and "4 record(s) FAILED" in err


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
    assert out[0]["redacted_text"] == "a@b.com [SSN]\n"
    _, out, err = run([str(path), "--types", "EMAIL"], capsys)
    assert out[0]["redacted_text"] == "[EMAIL] 123-45-6789\n" and "type_not_selected 1" in err
    for argv, message in [(["--types", "NOPE"], "unknown PII type"), (["--key-env", "PIINER_UNSET_VAR_X"], "unset"),
                          (["--threshold", "2"], "TIER=SCORE"), (["--threshold", "2=x"], "TIER=SCORE"),
                          # two scores for one tier: one would be ignored without a word
                          (["--threshold", "2=0.5", "--threshold", "2=0.7"], "--threshold names '2' twice"),
                          (["--threshold", "2=0.5", "--threshold", "02=0.7"], "--threshold names tier 2 twice"),
                          (["missing.txt"], "not found")]:
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


# -- outputs are checked before any work, and nothing the user owns is destroyed ------------------------------------

def test_output_that_is_the_input_is_refused_and_the_input_kept(tmp_path, capsys):
    path = tmp_path / "x.txt"
    path.write_text("mail a@b.com\n")
    for same in (str(path), f"{tmp_path}/./x.txt"):  # another spelling of it (pathlib would drop the ".")
        code, _, err = run([str(path), "-o", same], capsys)
        assert code == cli.EXIT_OUTPUT and f"output {same} is also input {path}" in err
    assert path.read_text() == "mail a@b.com\n"


def test_a_directory_or_unwritable_output_is_its_own_error(tmp_path, capsys):
    path = tmp_path / "x.txt"
    path.write_text("mail a@b.com\n")
    for output, message in ((tmp_path, "is a directory"), (tmp_path / "no" / "out.jsonl", "does not exist"),
                            ("/proc/self/out.jsonl", "cannot write")):
        code, _, err = run([str(path), "-o", str(output)], capsys)
        assert code == cli.EXIT_OUTPUT and message in err, err
    assert cli.EXIT_OUTPUT != cli.EXIT_RECORDS_FAILED


def test_the_model_loads_only_after_inputs_and_outputs_are_checked(tmp_path, capsys, monkeypatch):
    loads = []
    monkeypatch.setattr(cli.Redactor, "from_pretrained", classmethod(lambda cls, *a, **k: loads.append(a)))
    path = tmp_path / "x.txt"
    path.write_text("a@b.com\n")
    assert cli.main([str(path), "--model", "m", "-o", str(path)]) == cli.EXIT_OUTPUT
    with pytest.raises(SystemExit):
        cli.main([str(tmp_path / "missing.txt"), "--model", "m"])
    assert loads == []


def test_a_run_that_stops_leaves_an_existing_output_untouched(tmp_path, capsys, monkeypatch):
    def broken(texts):
        raise RuntimeError("model is broken")

    monkeypatch.setattr(cli, "build_redactor", lambda args, parser: cli.Redactor(broken))
    path, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    path.write_text('{"text": "x"}\n' * 30)
    out.write_text("previous results\n")
    assert cli.main([str(path), "--model", "m", "-o", str(out)]) == cli.EXIT_USAGE
    assert out.read_text() == "previous results\n" and sorted(p.name for p in tmp_path.iterdir()) == [
        "in.jsonl", "out.jsonl"]


# -- text is redacted as documents; JSON arrays are JSON ------------------------------------------------------------

def password_after_its_label(texts):
    """A detector that, like the model, needs the label to see the value: it finds a password only in context."""
    out = []
    for text in texts:
        found = []
        marker = text.find("Password:")
        if marker >= 0:
            start = marker + len("Password:")
            while start < len(text) and text[start].isspace():
                start += 1
            end = start
            while end < len(text) and not text[end].isspace():
                end += 1
            if end > start:
                found.append({"type": "PASSWORD", "tier": 4, "score": 0.9, "start": start, "end": end})
        out.append(found)
    return out


def test_a_text_file_is_one_document_so_a_value_under_its_label_is_found(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(cli, "build_redactor", lambda args, parser: cli.Redactor(password_after_its_label))
    path = tmp_path / "creds.txt"
    path.write_text("User: ana\nPassword:\nhunter2\n")
    out, text_out = tmp_path / "creds.jsonl", tmp_path / "creds.redacted.txt"
    assert cli.main([str(path), "--model", "m", "-o", str(out), "--text-output", str(text_out)]) == 0
    record = json.loads(out.read_text())
    assert record["redacted_text"] == "User: ana\nPassword:\n[PASSWORD]\n"
    assert text_out.read_text() == record["redacted_text"] and "hunter2" not in out.read_text()
    # One record per line is still there, on request, and it is what leaked before.
    assert cli.main([str(path), "--model", "m", "-o", str(out), "--format", "lines"]) == 0
    assert "hunter2" in out.read_text()


def test_a_json_array_is_read_as_json(tmp_path, capsys):
    path = tmp_path / "records.json"
    path.write_text(json.dumps([{"id": 7, "text": "a@b.com"}, "call 123-45-6789", 5]))
    code, out, err = run([str(path)], capsys)
    assert code == 1 and len(out) == 3
    assert out[0] == {"id": 7, "redacted_text": "[EMAIL]", "entities": out[0]["entities"]}
    assert out[1]["redacted_text"] == "call [SSN]"
    assert out[2]["line"] == 3 and "got int" in out[2]["error"]
    assert "from 3 array elements (json)" in err


def test_a_folder_given_as_input_is_named_as_a_folder(tmp_path, capsys):
    """It was "input file not found" for a folder that exists."""
    with pytest.raises(SystemExit) as exited:
        run([str(tmp_path)], capsys)
    err = capsys.readouterr().err
    assert exited.value.code == 2 and f"{tmp_path} is a folder" in err and "piiner-corpus" in err


def test_output_and_text_output_spelled_differently_are_still_one_file(tmp_path, capsys):
    """Only equal strings were refused: with "x.jsonl" and "./x.jsonl" the text output replaced the JSON one."""
    path = tmp_path / "in.txt"
    path.write_text("mail a@b.com\n")
    out = tmp_path / "x.jsonl"
    with pytest.raises(SystemExit) as exited:
        run([str(path), "-o", str(out), "--text-output", f"{tmp_path}/./x.jsonl"], capsys)  # pathlib drops "."
    assert exited.value.code == 2 and "--text-output" in capsys.readouterr().err and not out.exists()


@pytest.mark.parametrize("raw", [b"mail a@b.com\r\nok\r\n", b"mail a@b.com\nlast line without one",
                                 b"a\r\n\r\nb\n\nc@d.com", b""])
def test_lines_format_keeps_each_lines_own_ending(tmp_path, capsys, raw):
    path, text_out = tmp_path / "in.txt", tmp_path / "out.txt"
    path.write_bytes(raw)
    code, _, _ = run([str(path), "--format", "lines", "-o", str(tmp_path / "o.jsonl"), "--text-output",
                      str(text_out)], capsys)
    assert code == 0
    expected = raw.replace(b"a@b.com", b"[EMAIL]").replace(b"c@d.com", b"[EMAIL]")
    assert text_out.read_bytes() == expected
