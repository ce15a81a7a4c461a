"""Corpus redaction: the same output records as piiner-redact, one per input record in order, failures counted
and kept in rejects, worker processes, restart without redoing finished shards, and the Ray engine (marked ray)."""

import json
import os

import datasets
import pytest

import piiner.corpus.job as job_module
from piiner.corpus import RedactorSpec, redact_corpus
from piiner.corpus.shards import CorpusError
from piiner.corpus.cli import main as corpus_main
from piiner.deid.cli import main as redact_main

SPEC = RedactorSpec(detector="regex", batch_size=4)


def write_corpus(folder):
    folder.mkdir()
    rows = [{"id": f"r{i}", "text": f"user{i}@x.org called 555-201-{3000 + i}", "meta": i} for i in range(9)]
    rows[3]["text"] = 7  # a non-string text: a failed record, counted
    (folder / "a.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows[:5]) + "not json\n")
    (folder / "b.jsonl").write_bytes(b"".join(json.dumps(r).encode() + b"\n" for r in rows[5:]) + b'{"text": "\xff"}\n')
    (folder / "note.txt").write_text("Password:\nhunter2 and mail bob@y.org\n")
    datasets.Dataset.from_list([{"id": "p0", "text": "ssn 123-45-6789"}, {"id": "p1", "text": "nothing"}]) \
        .to_parquet(str(folder / "c.parquet"))
    return folder


def read_output(folder):
    out = []
    for name in sorted(os.listdir(folder)):
        if name.startswith("part-"):
            out += [json.loads(line) for line in (folder / name).read_text().splitlines()]
    return out


def test_the_local_engine_writes_what_piiner_redact_writes(tmp_path):
    corpus = write_corpus(tmp_path / "corpus")
    summary = redact_corpus(corpus, tmp_path / "out", SPEC, num_proc=2, rows_per_shard=3)
    got = read_output(tmp_path / "out")
    expected = []
    for name in ("a.jsonl", "b.jsonl", "c.parquet", "note.txt"):
        if name.endswith(".parquet"):
            rows = datasets.Dataset.from_parquet(str(corpus / name)).to_list()
            (tmp_path / "c.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
            source = tmp_path / "c.jsonl"
        else:
            source = corpus / name
        redact_main([str(source), "--detector", "regex", "-o", str(tmp_path / "cli.jsonl"), "--no-progress"])
        records = [json.loads(line) for line in (tmp_path / "cli.jsonl").read_text().splitlines()]
        # A text file is one document, as for piiner-redact; in a corpus its file name is its id.
        expected += [{"id": name, **r} for r in records] if name.endswith(".txt") else records
    assert got == expected
    assert summary["records"] == len(expected) == 6 + 5 + 2 + 1 and summary["shards"] == 6
    assert summary["failures"] == {"invalid UTF-8": 1, "not valid JSON": 1, "text is not a string": 1}
    rejects = [json.loads(line) for name in sorted(os.listdir(tmp_path / "out" / "rejects"))
               for line in (tmp_path / "out" / "rejects" / name).read_text().splitlines()]
    assert sorted(r["reason"] for r in rejects) == ["invalid UTF-8", "not valid JSON", "text is not a string"]
    assert {"id": "r3"}.items() <= next(r for r in rejects if r["reason"] == "text is not a string").items()


def test_a_dataset_is_redacted_in_order_with_its_ids(tmp_path):
    table = datasets.Dataset.from_list([{"id": i, "text": f"mail u{i}@x.org"} for i in range(7)])
    table.save_to_disk(str(tmp_path / "saved"))
    redact_corpus(datasets.load_from_disk(str(tmp_path / "saved")), tmp_path / "out", SPEC, rows_per_shard=3)
    got = read_output(tmp_path / "out")
    assert [r["id"] for r in got] == list(range(7)) and got[0]["redacted_text"] == "mail [EMAIL]"


def test_a_record_with_its_own_error_field_is_an_output_not_a_reject(tmp_path):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.jsonl").write_text(json.dumps({"id": 1, "text": "mail a@b.org", "error": "none"}) + "\n")
    summary = redact_corpus(tmp_path / "in", tmp_path / "out", SPEC)
    assert summary["failed"] == 0 and read_output(tmp_path / "out")[0]["error"] == "none"
    assert (tmp_path / "out" / "rejects" / "part-00000.jsonl").read_text() == ""


def test_ray_actors_given_gpus_run_the_model_on_them(tmp_path, monkeypatch):
    import piiner.corpus.engines as engines

    seen = []
    monkeypatch.setattr(engines, "run_ray", lambda job, shards, *args: seen.append(job.spec.device))
    corpus = write_corpus(tmp_path / "corpus")
    for i, device in enumerate((None, "cuda:1")):
        with pytest.raises(FileNotFoundError):  # no shard ran, so no done markers: only the spec is under test
            redact_corpus(corpus, tmp_path / f"out{i}", RedactorSpec(model="org/m", device=device), engine="ray",
                          num_gpus=1)
    assert seen == ["cuda", "cuda:1"]


def test_a_killed_job_started_again_skips_finished_shards_and_writes_no_duplicates(tmp_path, monkeypatch):
    corpus = write_corpus(tmp_path / "corpus")
    real, calls = job_module.read_shard, []

    class Killed(Exception):
        pass

    def dies_on_the_third(shard, text_field):
        calls.append(shard.name)
        if calls == ["part-00000", "part-00001", "part-00002"]:
            raise Killed  # the first job is killed in its third shard
        return real(shard, text_field)

    monkeypatch.setattr(job_module, "read_shard", dies_on_the_third)
    with pytest.raises(Killed):
        redact_corpus(corpus, tmp_path / "out", SPEC, rows_per_shard=3)
    finished = sorted(os.listdir(tmp_path / "out" / "_done"))
    assert finished == ["part-00000.json", "part-00001.json"]
    calls.clear()
    summary = redact_corpus(corpus, tmp_path / "out", SPEC, rows_per_shard=3)
    assert "part-00000" not in calls and "part-00001" not in calls and summary["shards_skipped_as_done"] == 2
    fresh = redact_corpus(corpus, tmp_path / "fresh", SPEC, rows_per_shard=3)
    assert read_output(tmp_path / "out") == read_output(tmp_path / "fresh") and fresh["records"] == summary["records"]


def test_the_command_line_and_its_errors(tmp_path, capsys):
    corpus = write_corpus(tmp_path / "corpus")
    assert corpus_main(["--input", str(corpus), "--output", str(tmp_path / "out"), "--detector", "regex"]) == 1
    assert json.loads(capsys.readouterr().out)["failed"] == 3
    assert corpus_main(["--input", str(tmp_path / "nope"), "--output", str(tmp_path / "o2"), "--detector",
                        "regex"]) == 2
    assert "does not exist" in capsys.readouterr().err


@pytest.mark.ray
def test_the_ray_engine_writes_the_same_records_as_the_local_one(tmp_path):
    pytest.importorskip("ray")
    corpus = write_corpus(tmp_path / "corpus")
    local = redact_corpus(corpus, tmp_path / "local", SPEC)
    on_ray = redact_corpus(corpus, tmp_path / "ray", SPEC, engine="ray", num_proc=2)
    assert read_output(tmp_path / "ray") == read_output(tmp_path / "local")
    assert on_ray["failures"] == local["failures"] and on_ray["records"] == local["records"]
    # Without a key, the job's one random key reaches every actor: one address, one hash.
    redact_corpus(write_repeated_email(tmp_path / "emails"), tmp_path / "hashed", RedactorSpec(detector="regex",
                  mode="hash"), engine="ray", num_proc=2, rows_per_shard=1)
    assert len({r["redacted_text"] for r in read_output(tmp_path / "hashed")}) == 1



HEAP_PROBE = """
import numpy, psutil
from piiner.corpus import RedactorSpec
RedactorSpec(detector="regex").build()
rss = lambda: psutil.Process().memory_info().rss
block = numpy.ones(2**19); del block  # a 4 MB block freed, as a worker frees a batch's activations
blocks = [numpy.ones(2**18) for _ in range(100)]  # 200 MB in 2 MB blocks
before = rss()
del blocks[::2]  # half of them freed, between blocks still in use
print((before - rss()) / 2**20)
"""


@pytest.mark.skipif(not hasattr(__import__("ctypes").CDLL(None), "mallopt"), reason="glibc only")
def test_a_worker_gives_freed_activation_memory_back_so_its_memory_does_not_grow_with_the_corpus():
    import subprocess
    import sys

    given_back = float(subprocess.run([sys.executable, "-c", HEAP_PROBE], capture_output=True, text=True,
                                      check=True).stdout)
    assert given_back > 90, f"of 100 MB freed, {given_back:.0f} MB went back to the system"


def listing(folder):
    return sorted((os.path.relpath(os.path.join(root, n), folder), os.path.getsize(os.path.join(root, n)))
                  for root, _, names in os.walk(folder) for n in names)


def test_an_output_folder_inside_the_input_or_holding_other_files_is_refused_and_left_as_it_was(tmp_path):
    corpus = write_corpus(tmp_path / "corpus")
    before = listing(corpus)
    with pytest.raises(CorpusError, match="inside the input"):
        redact_corpus(corpus, corpus / "redacted", SPEC)
    with pytest.raises(CorpusError, match="inside the input"):
        redact_corpus(corpus, corpus, SPEC)
    assert listing(corpus) == before
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "part-00000.jsonl").write_text("my own file\n")
    with pytest.raises(CorpusError, match="no _done"):
        redact_corpus(corpus, mine, SPEC)
    assert listing(mine) == [("part-00000.jsonl", 12)]


def test_a_job_started_again_over_other_shards_is_refused_and_one_killed_before_its_first_shard_resumes(
        tmp_path, monkeypatch):
    corpus = write_corpus(tmp_path / "corpus")
    redact_corpus(corpus, tmp_path / "out", SPEC, rows_per_shard=3)
    before = listing(tmp_path / "out")
    with pytest.raises(CorpusError, match="another job's output: its part-00000 was .*a.jsonl rows \\[0, 3\\], this job.s is .*a.jsonl rows \\[0, 2\\]"):
        redact_corpus(corpus, tmp_path / "out", SPEC, rows_per_shard=2)  # other rows under the same shard names
    assert listing(tmp_path / "out") == before
    assert redact_corpus(corpus, tmp_path / "out", SPEC, rows_per_shard=3)["shards_skipped_as_done"] > 0

    def killed(shard, text_field):
        raise KeyboardInterrupt

    monkeypatch.setattr(job_module, "read_shard", killed)
    with pytest.raises(KeyboardInterrupt):
        redact_corpus(corpus, tmp_path / "again", SPEC)
    monkeypatch.undo()
    assert redact_corpus(corpus, tmp_path / "again", SPEC)["records"] == redact_corpus(corpus, tmp_path / "o3", SPEC)["records"]


def test_a_job_that_cannot_run_says_so_before_the_model_loads(tmp_path, monkeypatch, capsys):
    built, build = [], RedactorSpec.build
    monkeypatch.setattr(RedactorSpec, "build", lambda spec: built.append(spec) or build(SPEC))  # the regex stands in
    corpus = write_corpus(tmp_path / "corpus")
    for input_, output, error in [(tmp_path / "nope", tmp_path / "o1", "does not exist"),
                                  (corpus, corpus / "out", "inside the input")]:
        assert corpus_main(["--input", str(input_), "--output", str(output), "--model", "some/model"]) == 2
        assert error in capsys.readouterr().err and built == []  # named at once, no model loaded for it
    assert not (tmp_path / "o1").exists()
    assert corpus_main(["--input", str(corpus), "--output", str(tmp_path / "o2"), "--model", "some/model"]) == 1
    assert len(built) == 1  # one process: the model loads once, for every shard


def write_repeated_email(folder, rows=6):
    folder.mkdir()
    (folder / "a.jsonl").write_text("".join(json.dumps({"id": i, "text": "write to ann@x.org"}) + "\n"
                                            for i in range(rows)))
    return folder


def test_hashes_agree_across_workers_when_no_key_is_given(tmp_path):
    corpus = write_repeated_email(tmp_path / "corpus")
    redact_corpus(corpus, tmp_path / "out", RedactorSpec(detector="regex", mode="hash"), num_proc=2,
                  rows_per_shard=1)
    replaced = {r["redacted_text"] for r in read_output(tmp_path / "out")}
    assert len(replaced) == 1, f"one address, several hashes across the job's workers: {replaced}"


def test_a_job_started_again_with_other_settings_is_refused(tmp_path, monkeypatch):
    corpus = write_repeated_email(tmp_path / "corpus")
    real = job_module.read_shard

    def dies_on_the_second(shard, text_field):
        if shard.index == 1:
            raise KeyboardInterrupt
        return real(shard, text_field)

    for i, (first, again, named) in enumerate([
            (SPEC, RedactorSpec(detector="regex", mode="mask", batch_size=4), "mode"),
            (RedactorSpec(detector="regex", mode="hash", key="k1"), RedactorSpec(detector="regex", mode="hash",
                                                                                key="k2"), "key"),
            # no key: each run draws its own, so a half-done job cannot be finished with the same replacements
            (RedactorSpec(detector="regex", mode="surrogate"), RedactorSpec(detector="regex", mode="surrogate"),
             "key")]):
        out = tmp_path / f"out{i}"
        monkeypatch.setattr(job_module, "read_shard", dies_on_the_second)
        with pytest.raises(KeyboardInterrupt):
            redact_corpus(corpus, out, first, rows_per_shard=3)
        monkeypatch.undo()
        before = listing(out)
        with pytest.raises(CorpusError, match=f"other settings.*{named}"):
            redact_corpus(corpus, out, again, rows_per_shard=3)
        assert listing(out) == before
    # The same settings (a batch size does not change the output) finish the job.
    monkeypatch.setattr(job_module, "read_shard", dies_on_the_second)
    with pytest.raises(KeyboardInterrupt):
        redact_corpus(corpus, tmp_path / "same", RedactorSpec(detector="regex", mode="hash", key="k"),
                      rows_per_shard=3)
    monkeypatch.undo()
    assert redact_corpus(corpus, tmp_path / "same", RedactorSpec(detector="regex", mode="hash", key="k", batch_size=2),
                         rows_per_shard=3)["shards_skipped_as_done"] == 1


def test_blank_jsonl_lines_are_counted_so_input_lines_add_up(tmp_path):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.jsonl").write_text('{"text": "mail a@b.org"}\n\n{"text": "x"}\n  \n')
    summary = redact_corpus(tmp_path / "in", tmp_path / "out", SPEC, rows_per_shard=2)
    assert summary["records"] == 2 and summary["blank_lines_skipped"] == 2  # 4 lines: 2 records, 2 blank


def test_a_model_the_workers_cannot_load_is_one_error_line_not_a_broken_pool(tmp_path, capsys):
    """With --num-proc 2 each worker failed in its initializer: two tracebacks and BrokenProcessPool."""
    corpus = write_repeated_email(tmp_path / "corpus", rows=2)
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")  # with weights: passes the path check, fails to load
    (model / "model.safetensors").write_text("not weights")
    assert corpus_main(["--input", str(corpus), "--output", str(tmp_path / "out"), "--model", str(model),
                        "--num-proc", "2", "--rows-per-shard", "1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("piiner-corpus: error: ") and "model_type" in err and "BrokenProcessPool" not in err


def test_a_model_path_that_is_no_model_is_named_before_any_engine_starts(tmp_path, monkeypatch):
    import piiner.corpus.engines as engines
    from piiner.snapshot import SnapshotError

    started = []
    monkeypatch.setattr(engines, "run_ray", lambda *args: started.append("ray"))
    monkeypatch.setattr(engines, "run_local", lambda *args: started.append("local"))
    corpus = write_repeated_email(tmp_path / "corpus", rows=2)
    for engine, num_proc in (("ray", 2), ("datasets", 2)):
        with pytest.raises(SnapshotError, match="model folder not found: /no/such/model"):
            redact_corpus(corpus, tmp_path / f"out-{engine}", RedactorSpec(model="/no/such/model"), engine=engine,
                          num_proc=num_proc)
    assert started == []


def test_files_of_an_input_folder_that_are_not_read_are_counted_and_named(tmp_path, capsys):
    """A .csv beside the .jsonl files, or a file whose name starts with "_", was passed over without a word."""
    corpus = write_repeated_email(tmp_path / "corpus", rows=2)
    for name in ("notes.csv", "README.md", ".hidden.jsonl", "_draft.jsonl"):
        (corpus / name).write_text('{"text": "mail b@c.org"}\n')
    summary = redact_corpus(corpus, tmp_path / "out", SPEC)
    assert summary["records"] == 2
    assert summary["files_not_read"] == {"name starts with . or _": 2, "not .jsonl/.ndjson/.json/.parquet/.txt": 2}
    assert corpus_main(["--input", str(corpus), "--output", str(tmp_path / "out2"), "--detector", "regex"]) == 0
    err = capsys.readouterr().err
    assert "4 files of the input folder not read" in err and "notes.csv" in err and "_draft.jsonl" in err


def test_a_failing_shard_stops_the_local_engine_without_running_the_queued_shards(tmp_path, monkeypatch):
    """The pool ran every queued shard before the first shard's error came out: a job of thousands of shards went on
    for hours to report a failure it met at the start (and Ctrl-C waited for them too)."""
    import concurrent.futures
    import threading

    import piiner.corpus.engines as engines

    class OneThreadPool(concurrent.futures.ThreadPoolExecutor):  # the process pool's interface, one worker
        def __init__(self, num_proc, mp_context=None):
            super().__init__(1)

    ran, wait = [], threading.Event()

    def run_shard(job, shard):
        ran.append(shard)
        if shard == 0:
            raise OSError("shard 0: disk full")
        wait.wait(0.02)

    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", OneThreadPool)
    monkeypatch.setattr(engines, "run_shard", run_shard)
    with pytest.raises(OSError, match="disk full"):
        engines.run_local(None, list(range(50)), num_proc=2)
    assert 1 <= len(ran) <= 3  # the failed shard, and at most what had started when its error came back


@pytest.mark.parametrize("value", ["0", "-3", "two"])
def test_a_worker_count_below_one_is_refused(tmp_path, capsys, value):
    corpus = write_corpus(tmp_path / "corpus")
    with pytest.raises(SystemExit) as exit_:
        corpus_main(["--input", str(corpus), "--output", str(tmp_path / "out"), "--detector", "regex",
                     "--num-proc", value])
    assert exit_.value.code == 2 and "--num-proc" in capsys.readouterr().err
    with pytest.raises(ValueError, match="num_proc must be a whole number of at least 1, got 0"):
        redact_corpus(corpus, tmp_path / "out", SPEC, num_proc=0)
    assert not (tmp_path / "out").exists()


def test_ctrl_c_ends_with_one_line_saying_what_was_finished_and_how_to_resume(tmp_path, monkeypatch, capsys):
    corpus = write_corpus(tmp_path / "corpus")
    real, calls = job_module.read_shard, []

    def interrupted_in_the_second(shard, text_field):
        calls.append(shard.name)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(shard, text_field)

    monkeypatch.setattr(job_module, "read_shard", interrupted_in_the_second)
    code = corpus_main(["--input", str(corpus), "--output", str(tmp_path / "out"), "--detector", "regex",
                        "--rows-per-shard", "3"])
    stderr = capsys.readouterr().err
    err = [line for line in stderr.splitlines() if line.startswith("piiner-corpus")]
    assert code == 130 and len(err) == 1 and "Traceback" not in stderr
    assert "interrupted: 1 shard(s) finished" in err[0] and "run the same command again" in err[0]


def write_tables(folder):
    """Two CSV exports of one schema (one with a ragged row) and a Parquet file of three row groups."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder.mkdir()
    (folder / "a.csv").write_text("id,ssn,notes\n1,219-09-9999,mail a@b.com\n2,078-05-1120,fine\n")
    (folder / "b.csv").write_text("id,ssn,notes\n3,123-45-6789,ok\n4,oops\n5,234-56-7890,call 555-201-3344\n")
    table = pa.table({"email": [f"user{i}@x.org" for i in range(6)], "n": list(range(6))})
    pq.write_table(table, folder / "c.parquet", row_group_size=2)
    (folder / "README.md").write_text("not a table")
    return folder


def test_a_folder_of_tables_is_redacted_table_by_table_with_one_decision_per_schema(tmp_path):
    import pyarrow.parquet as pq

    corpus = write_tables(tmp_path / "tables")
    out = tmp_path / "out"
    summary = redact_corpus(corpus, out, SPEC, tables=True, rows_per_shard=4)
    # a.csv, b.csv, and c.parquet cut into two shards of whole row groups (4 rows, then 2)
    assert summary["shards"] == 4 and summary["records"] == 4 + 6 and summary["failed"] == 1
    assert summary["failures"] == {"ragged row": 1} and summary["files_not_read"] == {"not .csv/.tsv/.parquet": 1}
    assert (out / "part-00000.a.csv").read_text() == "id,ssn,notes\n1,[SSN],mail [EMAIL]\n2,[SSN],fine\n"
    assert (out / "part-00001.b.csv").read_text() == "id,ssn,notes\n3,[SSN],ok\n5,[SSN],call [PHONE]\n"
    assert json.loads((out / "rejects" / "part-00001.jsonl").read_text()) == {
        "row": 2, "reason": "ragged row: 2 fields, the header has 3"}
    parts = [pq.read_table(out / f"part-0000{i}.c.parquet") for i in (2, 3)]
    assert [p.num_rows for p in parts] == [4, 2] and parts[1].column("n").to_pylist() == [4, 5]
    assert set(parts[0].column("email").to_pylist()) == {"[EMAIL]"}
    reports = json.loads((out / "column_reports.json").read_text())
    assert [[c["column"] for c in r["columns"]] for r in reports] == [["id", "ssn", "notes"], ["email", "n"]]
    # started again: every shard is done, nothing is redone
    assert redact_corpus(corpus, out, SPEC, tables=True, rows_per_shard=4)["shards_skipped_as_done"] == 4
    assert corpus_main(["--input", str(corpus), "--output", str(tmp_path / "cli"), "--detector", "regex",
                        "--tables", "--rows-per-shard", "4"]) == 1  # a row rejected: status 1, like piiner-redact


@pytest.mark.ray
def test_ray_redacts_a_folder_of_tables_as_the_local_engine_does(tmp_path):
    pytest.importorskip("ray")
    corpus = write_tables(tmp_path / "tables")
    local = redact_corpus(corpus, tmp_path / "local", SPEC, tables=True, rows_per_shard=4)
    on_ray = redact_corpus(corpus, tmp_path / "ray", SPEC, tables=True, rows_per_shard=4, engine="ray", num_proc=2)
    assert (on_ray["records"], on_ray["failures"]) == (local["records"], local["failures"])
    for name in ("part-00000.a.csv", "part-00001.b.csv", "part-00002.c.parquet", "part-00003.c.parquet"):
        assert (tmp_path / "ray" / name).read_bytes() == (tmp_path / "local" / name).read_bytes()
