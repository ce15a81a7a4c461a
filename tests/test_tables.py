"""Tables: `piiner-redact people.csv -o out.csv` keeps the table's shape, reads each cell with its column's name,
types whole columns, counts every row it cannot read, and never writes over its input."""

import csv
import io
import json

import pytest

from piiner.baselines.regex import RegexDetector
from piiner.deid import Redactor
from piiner.deid.cli import main as redact_main
from piiner.tables import ColumnReport, analyse_columns, redact_table
from piiner.tables.columns import header_type
from piiner.tables.formats import Table

PEOPLE = (
    "id,full_name,ssn,email,col_7,notes,amount\n"
    "1042,John Smith,219-09-9999,john@example.com,123-45-6780,\"Call 212-555-0147 about it, or mail j@x.org\",12.50\n"
    "1043,Maria Garcia,078-05-1120,maria@garcia.org,234-56-7890,No issues reported.,7\n"
    "1044,Wei Chen,219-09-9999,wchen@corp.com,345-67-8901,\"Ticket escalated, customer angry\",99\n"
)


class Recorder:
    """The regex detector, plus names it is told about, remembering every text it was asked to read."""

    def __init__(self, names=("John Smith", "Maria Garcia", "Wei Chen"), miss=()):
        self.regex, self.names, self.miss, self.texts = RegexDetector(), names, set(miss), []

    def __call__(self, texts):
        self.texts += texts
        out = []
        for text in texts:
            found = [e for e in self.regex([text])[0] if e["word"] not in self.miss]
            for name in self.names:
                at = text.find(name)
                if at >= 0 and name not in self.miss:
                    found.append({"type": "PERSON", "tier": 2, "score": 0.9, "start": at, "end": at + len(name)})
            out.append(sorted(found, key=lambda e: e["start"]))
        return out


def write(tmp_path, name, content):
    path = tmp_path / name
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    return path


def run(path, detector, tmp_path, **kwargs):
    out = io.BytesIO()
    report, summary = redact_table(Table(str(path)), Redactor(detector, **kwargs.pop("redactor", {})), out,
                                   **kwargs)
    return report, summary, out.getvalue().decode()


def rows(text):
    return list(csv.reader(io.StringIO(text)))


def test_a_csv_keeps_its_shape_and_every_cell_without_pii(tmp_path):
    report, summary, out = run(write(tmp_path, "people.csv", PEOPLE), Recorder(), tmp_path)
    before, after = rows(PEOPLE), rows(out)
    assert after[0] == before[0] and len(after) == len(before)
    assert all(len(row) == len(before[0]) for row in after)
    decisions = {d.column: (d.decision, d.type) for d in report.columns}
    assert decisions == {"id": ("none", None), "full_name": ("type", "PERSON"), "ssn": ("type", "SSN"),
                         "email": ("type", "EMAIL"), "col_7": ("type", "SSN"), "notes": ("text", None),
                         "amount": ("none", None)}
    for old, new in zip(before[1:], after[1:]):
        assert (new[0], new[6]) == (old[0], old[6])  # id and amount as they were
        assert new[1:5] == ["[PERSON]", "[SSN]", "[EMAIL]", "[SSN]"]
    assert after[1][5] == "Call [PHONE] about it, or mail [EMAIL]"
    assert after[2][5] == "No issues reported."
    assert summary.written == 3 and not summary.rejects


def test_each_cell_is_read_alone_with_its_columns_name(tmp_path):
    detector = Recorder()
    run(write(tmp_path, "people.csv", PEOPLE), detector, tmp_path)
    assert "ssn: 219-09-9999" in detector.texts and "col 7: 123-45-6780" in detector.texts
    assert "notes: No issues reported." in detector.texts
    assert not any("," in t and "@" in t and "-" in t.split(":", 1)[1].split(",")[0] for t in detector.texts
                   if t.startswith(("ssn", "email")))  # never a row's cells joined


def test_a_typed_column_hides_the_value_the_detector_misses(tmp_path):
    # The detector misses "Maria Garcia" and one SSN; their columns are typed by the other rows, so both are hidden.
    _, _, out = run(write(tmp_path, "people.csv", PEOPLE), Recorder(miss={"Maria Garcia", "078-05-1120"}), tmp_path)
    assert "Maria Garcia" not in out and "078-05-1120" not in out


def test_surrogates_are_one_per_value_across_the_table_and_hashes_join_across_files(tmp_path):
    path = write(tmp_path, "people.csv", PEOPLE)
    _, _, out = run(path, Recorder(), tmp_path, redactor={"mode": "surrogate", "key": b"k" * 16})
    ssns = [row[2] for row in rows(out)[1:]]
    assert ssns[0] == ssns[2] != ssns[1] and "219-09-9999" not in out
    other = write(tmp_path, "other.csv", "ssn\n219-09-9999\n")
    hashed = [run(p, Recorder(), tmp_path, redactor={"mode": "hash", "key": b"k" * 16})[2] for p in (path, other)]
    assert rows(hashed[0])[1][2] == rows(hashed[1])[1][0]


def test_column_analysis_reads_headers_and_values():
    assert [header_type(h) for h in ("CustomerSSN", "e-mail", "Date of Birth", "product_name", "zip", "notes")] == [
        "SSN", "EMAIL", "DATE_OF_BIRTH", None, "LOCATION", None]
    sample = [{"col_3": f"{100 + a}-45-678{a}", "id": str(a), "city": "Paris" if a % 2 else "", "code": "AB-1"}
              for a in range(1, 9)]

    def detect(texts):  # the regex detector, and every bare number read as a tax id, as a model may
        return [entities + [{"type": "TAX_ID", "tier": 1, "score": 0.9, "start": t.index(":") + 2, "end": len(t)}]
                if t.split(": ")[1].isdigit() else entities for t, entities in zip(texts, RegexDetector()(texts))]

    by = analyse_columns(sample, detect).by_column()
    assert (by["col_3"].decision, by["col_3"].type, by["col_3"].agreement) == ("type", "SSN", 1.0)
    assert by["col_3"].examples[0] == "1**-**-****"
    assert (by["id"].decision, by["id"].reason) == ("none", "a record key: only validated identifiers would type it")
    assert (by["city"].cells_sampled, by["city"].decision, by["code"].decision) == (4, "none", "none")


def test_rows_that_cannot_be_rows_are_counted_rejects_with_their_row_numbers(tmp_path):
    path = write(tmp_path, "bad.csv", "name,ssn\nJohn Smith,219-09-9999\nonly one field\n"
                                      "Wei Chen,078-05-1120,extra\nMaria Garcia,234-56-7890\n")
    rejects = io.BytesIO()
    out = io.BytesIO()
    _, summary = redact_table(Table(str(path)), Redactor(Recorder()), out, rejects_stream=rejects)
    assert summary.rows == 4 and summary.written == 2 and summary.rejects == {"ragged row": 2}
    lines = [json.loads(line) for line in rejects.getvalue().splitlines()]
    assert [r["row"] for r in lines] == [2, 3] and "Wei Chen" not in rejects.getvalue().decode()
    assert len(rows(out.getvalue().decode())) == 3


def test_the_command_writes_the_report_and_a_later_file_reuses_it(tmp_path, capsys):
    path = write(tmp_path, "people.csv", PEOPLE)
    out, report = tmp_path / "out.csv", tmp_path / "report.json"
    assert redact_main([str(path), "-o", str(out), "--detector", "regex", "--column-report", str(report),
                        "--column-type", "full_name=PERSON", "--no-progress"]) == 0
    saved = ColumnReport.load(report)
    assert saved.by_column()["ssn"].type == "SSN" and "219-09-9999" not in report.read_text()
    later = write(tmp_path, "later.csv", "id,full_name,ssn,email,col_7,notes,amount\n"
                                         "7,Ann Lee,not given,ann@lee.io,x,fine,1\n")
    out2 = tmp_path / "later.out.csv"
    assert redact_main([str(later), "-o", str(out2), "--detector", "regex", "--use-report", str(report),
                        "--skip-columns", "email", "--no-progress"]) == 0
    assert rows(out2.read_text())[1] == ["7", "[PERSON]", "[SSN]", "ann@lee.io", "[SSN]", "fine", "1"]
    other = write(tmp_path, "other.csv", "name,phone\nA,1\n")
    assert redact_main([str(other), "-o", str(tmp_path / "o.csv"), "--detector", "regex", "--use-report",
                        str(report), "--no-progress"]) == 2
    assert "no decision for the columns" in capsys.readouterr().err


def test_bad_input_and_outputs_are_refused_without_touching_the_input(tmp_path, capsys):
    path = write(tmp_path, "people.csv", PEOPLE)
    with pytest.raises(SystemExit):
        redact_main([str(path), "-o", str(path), "--detector", "regex"])
    assert path.read_text() == PEOPLE
    with pytest.raises(SystemExit):
        redact_main([str(path), "-o", str(tmp_path / "out.jsonl"), "--detector", "regex"])
    latin = write(tmp_path, "latin.csv", "name\nJos\xe9\n".encode("latin-1"))
    assert redact_main([str(latin), "-o", str(tmp_path / "l.csv"), "--detector", "regex", "--no-progress"]) == 2
    assert "--encoding" in capsys.readouterr().err and not (tmp_path / "l.csv").exists()
    assert redact_main([str(latin), "-o", str(tmp_path / "l.csv"), "--detector", "regex", "--encoding", "latin-1",
                        "--no-progress"]) == 0
    assert (tmp_path / "l.csv").read_text() == "name\nJos\xe9\n"


def test_json_records_keep_nesting_and_non_text_values(tmp_path):
    records = [{"id": 1, "customer": {"ssn": "219-09-9999", "emails": ["a@b.com", "c@d.org"]}, "ok": True},
               {"id": 2, "customer": {"ssn": "078-05-1120", "emails": []}, "ok": False, "note": None}]
    path = write(tmp_path, "people.jsonl", "".join(json.dumps(r) + "\n" for r in records))
    out = tmp_path / "out.jsonl"
    assert redact_main([str(path), "-o", str(out), "--table", "--detector", "regex", "--no-progress"]) == 0
    got = [json.loads(line) for line in out.read_text().splitlines()]
    assert got[0] == {"id": 1, "customer": {"ssn": "[SSN]", "emails": ["[EMAIL]", "[EMAIL]"]}, "ok": True}
    assert got[1] == {"id": 2, "customer": {"ssn": "[SSN]", "emails": []}, "ok": False, "note": None}


def test_parquet_keeps_its_schema_and_a_typed_number_column_becomes_text(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    table = pa.table({"ssn": pa.array([219099999, 78051120, 234567890], pa.int64()),
                      "name": ["John Smith", "Maria Garcia", "Wei Chen"], "score": [0.5, 1.5, 2.5]})
    path = tmp_path / "people.parquet"
    pq.write_table(table, path, row_group_size=2)
    out = tmp_path / "out.parquet"
    assert redact_main([str(path), "-o", str(out), "--detector", "regex", "--column-type", "ssn=SSN",
                        "--no-progress"]) == 0
    got = pq.read_table(out)
    assert got.schema.field("score").type == pa.float64() and got.column("score").to_pylist() == [0.5, 1.5, 2.5]
    assert got.column("ssn").to_pylist() == ["[SSN]"] * 3 and got.num_rows == 3


def test_a_model_reading_numbers_as_phones_types_no_column_of_ids_or_amounts():
    def detect(texts):  # every value read whole as a phone number; dates split between DATE and DATE_OF_BIRTH
        out = []
        for i, text in enumerate(texts):
            start = text.index(": ") + 2
            value = text[start:]
            kind = ("DATE" if i % 2 else "DATE_OF_BIRTH") if value.count("-") == 2 and len(value) == 10 else "PHONE"
            out.append([{"type": kind, "tier": 2, "score": 0.9, "start": start, "end": len(text)}])
        return out

    sample = [{"col_1": str(31000 + i), "col_2": f"{i}.50", "col_3": f"(212) 555-01{i:02d}",
               "col_4": f"19{60 + i}-0{1 + i % 9}-1{i % 10}"} for i in range(10)]
    by = analyse_columns(sample, detect).by_column()
    assert [(by[c].decision, by[c].type) for c in ("col_1", "col_2", "col_3")] == [
        ("none", None), ("none", None), ("type", "PHONE")]
    assert (by["col_4"].decision, by["col_4"].agreement) == ("type", 1.0)


def test_a_bad_quote_and_an_oversized_cell_are_counted_rejects_and_the_rows_after_them_are_read(tmp_path):
    path = write(tmp_path, "q.csv", 'name,ssn\nJohn,219-09-9999\nbad,"12"3\nMary,078-05-1120\n'
                                    f"long,{'x' * 101}\nWei,123-45-6789\n")
    out, rejects = io.BytesIO(), io.BytesIO()
    _, summary = redact_table(Table(str(path), max_cell_chars=100), Redactor(Recorder()), out, rejects_stream=rejects)
    assert summary.rejects == {"bad CSV": 1, "cell over the size limit": 1}
    assert [json.loads(line)["row"] for line in rejects.getvalue().splitlines()] == [2, 4]
    assert rows(out.getvalue().decode())[1:] == [["John", "[SSN]"], ["Mary", "[SSN]"], ["Wei", "[SSN]"]]
