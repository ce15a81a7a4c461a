"""`piiner-data import`: documents labelled in Label Studio, doccano, brat, CoNLL or piiner's JSONL become a dataset
folder piiner-train reads, labels mapped, split by group, every bad row counted with its place and reason."""

import json
import types

import pytest

from piiner.data_prep.cli import main as data_main
from piiner.training.train import load_records

NOTE = "PT SEEN BY DR. SMITH ON 7/22. CALL 555-201-3344."
LABEL_MAP = {"Name": "PERSON", "Date": "DATE", "Phone": "PHONE", "Drug": "O", "Other": "drop"}


def write_map(tmp_path, mapping=LABEL_MAP):
    path = tmp_path / "map.json"
    path.write_text(json.dumps(mapping))
    return str(path)


def read_out(out):
    rows = {split: [json.loads(line) for line in (out / f"{split}.jsonl").read_text().splitlines()]
            for split in ("train", "validation", "test")}
    return rows, json.loads((out / "import_report.json").read_text())


def spans_of(record):
    return [(record["text"][s["start"]:s["end"]], s["label"]) for s in record["spans"]]


def test_label_studio_export_becomes_records_with_the_types_the_labellers_were_asked_for(tmp_path):
    tasks = [{"id": 1, "data": {"text": NOTE, "patient": "p1"}, "annotations": [{"result": [
        {"type": "labels", "value": {"start": 15, "end": 20, "text": "SMITH", "labels": ["Name"]}},
        {"type": "labels", "value": {"start": 24, "end": 28, "text": "7/22", "labels": ["Date"]}},
        {"type": "labels", "value": {"start": 35, "end": 47, "text": "555-201-3344", "labels": ["Phone"]}}]}]},
        {"id": 2, "data": {"text": "NO PHI HERE", "patient": "p1"}, "annotations": [{"was_cancelled": True}]}]
    path = tmp_path / "export.json"
    path.write_text(json.dumps(tasks))
    out = tmp_path / "out"
    assert data_main(["import", str(path), "--format", "label-studio", "--label-map", write_map(tmp_path),
                      "--out", str(out), "--group-by", "patient"]) == 0
    rows, report = read_out(out)
    records = [r for split in rows.values() for r in split]
    assert len(records) == 1 and report["rejected"] == 1
    assert report["rejected_rows"][0] == {"where": f"{path}:task 2", "reason": "no annotation that was not cancelled"}
    # the types the map names are the labelled ones; "Drug" (O) and "Other" (drop) are not
    assert spans_of(records[0]) == [("DR. SMITH", "PERSON"), ("7/22", "DATE"), ("555-201-3344", "PHONE")]
    assert records[0]["labelled_types"] == ["DATE", "PERSON", "PHONE"] and records[0]["group"] == "patient=p1"


def test_doccano_brat_conll_and_jsonl_read_the_same_note(tmp_path):
    doccano = tmp_path / "d.jsonl"
    doccano.write_text(json.dumps({"text": NOTE, "label": [[15, 20, "Name"], [24, 28, "Date"]]}) + "\n"
                       + json.dumps({"text": NOTE, "entities": [{"start_offset": 35, "end_offset": 47,
                                                                  "label": "Phone"}]}) + "\n{oops\n")
    brat = tmp_path / "brat"
    brat.mkdir()
    (brat / "a.txt").write_text(NOTE)
    (brat / "a.ann").write_text("T1\tName 15 20\tSMITH\nT2\tDate 24 28\t7/22\n#1\tAnnotatorNotes T1\tok\n")
    (brat / "b.txt").write_text(NOTE)
    (brat / "b.ann").write_text("T1\tName 14 16;17 22\tDR SMITH\n")
    conll = tmp_path / "c.conll"
    conll.write_text("-DOCSTART- O\n\nSEEN O\nBY O\nSMITH B-Name\nJONES I-Name\n.\tO\n\nCALL O\nX\n")
    jsonl = tmp_path / "j.jsonl"
    jsonl.write_text(json.dumps({"text": NOTE, "spans": [{"start": 15, "end": 20, "label": "Name"}], "site": "s1"})
                     + "\n" + json.dumps({"text": NOTE, "spans": [{"start": 15, "end": 21, "label": "Name",
                                                                    "value": "SMITH"}], "site": "s1"}) + "\n")
    found = {}
    for fmt, path in (("doccano", doccano), ("brat", brat), ("conll", conll), ("jsonl", jsonl)):
        out = tmp_path / f"out-{fmt}"
        assert data_main(["import", str(path), "--format", fmt, "--label-map", write_map(tmp_path),
                          "--out", str(out)]) == 0
        rows, report = read_out(out)
        found[fmt] = (sorted(spans_of(r) for split in rows.values() for r in split), report)
    assert found["doccano"][0] == [[("555-201-3344", "PHONE")], [("DR. SMITH", "PERSON"), ("7/22", "DATE")]]
    assert found["doccano"][1]["rejected_rows"] == [{"where": f"{doccano}:3", "reason": "not JSON (Expecting "
                                                                                         "property name enclosed in "
                                                                                         "double quotes)"}]
    assert found["brat"][0] == [[("DR. SMITH", "PERSON"), ("7/22", "DATE")]]
    assert found["brat"][1]["rejected_rows"][0]["reason"] == "a discontinuous span: piiner spans are one stretch"
    assert found["conll"][0] == [[("SMITH JONES", "PERSON")]]
    assert found["conll"][1]["rejected_rows"][0]["reason"].startswith("no tag for token 'X'")
    # the second JSONL record claims "SMITH" at 15:21, which holds "SMITH ": its value, found once, places it
    assert found["jsonl"][0] == [[("DR. SMITH", "PERSON")], [("DR. SMITH", "PERSON")]]


def test_unmapped_labels_stop_the_import_with_their_list_or_are_dropped_when_asked(tmp_path, capsys):
    path = tmp_path / "d.jsonl"
    path.write_text(json.dumps({"text": NOTE, "label": [[15, 20, "Doctor"], [24, 28, "Date"], [0, 2, "Doctor"]]})
                    + "\n")
    out = tmp_path / "out"
    assert data_main(["import", str(path), "--format", "doccano", "--label-map", write_map(tmp_path),
                      "--out", str(out)]) == 2
    assert "labels the label map does not name: Doctor (2)" in capsys.readouterr().err and not out.exists()
    assert data_main(["import", str(path), "--format", "doccano", "--label-map", write_map(tmp_path),
                      "--out", str(out), "--unmapped", "drop"]) == 0
    rows, report = read_out(out)
    assert report["unmapped_labels_dropped"] == {"Doctor": 2}
    assert [spans_of(r) for split in rows.values() for r in split] == [[("7/22", "DATE")]]
    bad_map = tmp_path / "bad.json"
    bad_map.write_text(json.dumps({"Name": "NAME"}))
    assert data_main(["import", str(path), "--format", "doccano", "--label-map", str(bad_map),
                      "--out", str(out)]) == 2
    assert "'Name' -> 'NAME' is not a piiner type" in capsys.readouterr().err


def test_groups_never_straddle_splits_and_piiner_train_reads_the_folder(tmp_path):
    path = tmp_path / "notes.jsonl"
    with path.open("w") as f:
        for patient in range(40):
            for note in range(3):
                f.write(json.dumps({"patient": patient, "text": f"NOTE {note}: SEEN BY DR. SMITH ON 7/22.",
                                    "spans": [{"start": 20, "end": 25, "label": "Name"}]}) + "\n")
    out = tmp_path / "out"
    assert data_main(["import", str(path), "--format", "jsonl", "--label-map", write_map(tmp_path), "--out", str(out),
                      "--group-by", "patient"]) == 0
    rows, report = read_out(out)
    groups = {split: {r["group"] for r in records} for split, records in rows.items()}
    assert all(rows[s] for s in rows) and sum(report["records"].values()) == 120
    assert not (groups["train"] & groups["test"] or groups["train"] & groups["validation"]
                or groups["validation"] & groups["test"])
    loaded = load_records(types.SimpleNamespace(dataset=str(out), train_split="train", validation_split="validation",
                                                test_split="test"))
    assert loaded["train"].num_rows == report["records"]["train"]
    with pytest.raises(SystemExit):
        data_main(["import", str(path), "--format", "excel", "--label-map", write_map(tmp_path), "--out", str(out)])


@pytest.mark.parametrize("fmt", ["doccano", "jsonl"])
def test_a_row_without_an_id_is_named_after_its_line_in_the_file(tmp_path, fmt):
    # A record is found again in its file by its id: blank and bad lines before it do not shift the number.
    row = {"text": NOTE, **({"label": [[15, 20, "Name"]]} if fmt == "doccano"
                            else {"spans": [{"start": 15, "end": 20, "label": "Name"}]})}
    path = tmp_path / "in.jsonl"
    path.write_text("\n{oops\n" + json.dumps(row) + "\n")
    out = tmp_path / "out"
    assert data_main(["import", str(path), "--format", fmt, "--label-map", write_map(tmp_path), "--out", str(out),
                      "--name", "notes"]) == 0
    rows, _ = read_out(out)
    assert [r["id"] for split in rows.values() for r in split] == ["notes-3"]


def test_a_tool_that_labels_word_by_word_gives_whole_entities_when_asked(tmp_path, capsys):
    # PhysioNet-style gold: "Holy" and "Cross" two places, "July" and "29th" two dates. Joined, they are the one
    # entity every other corpus writes (and a model predicts); a line break or punctuation still parts two.
    text = "TO HOLY CROSS ON July 29th.\nSEEN 10/29. 10/30 AT Kessler-Adventist\nBoston"
    words = ["HOLY", "CROSS", "July", "29th", "10/29", "10/30", "Kessler", "Adventist", "Boston"]
    labels = ["Location", "Location", "Date", "Date", "Date", "Date", "Location", "Location", "Location"]
    starts, at = [], 0
    for word in words:
        at = text.index(word, at)
        starts.append(at)
        at += len(word)
    path = tmp_path / "notes.jsonl"
    path.write_text(json.dumps({"text": text, "spans": [{"start": s, "end": s + len(w), "label": lab}
                                                        for s, w, lab in zip(starts, words, labels)]}) + "\n")
    mapping = write_map(tmp_path, {"Location": "LOCATION", "Date": "DATE"})

    def imported(*extra):
        out = tmp_path / f"out{len(extra)}"
        assert data_main(["import", str(path), "--format", "jsonl", "--label-map", mapping, "--out", str(out),
                          "--test-fraction", "0", "--validation-fraction", "0", *extra]) == 0
        rows, report = read_out(out)
        return spans_of(rows["train"][0]), report

    apart, report = imported()
    assert len(apart) == 9 and report["word_parts_apart"] == {"LOCATION": 2, "DATE": 1}
    assert "--join-words joins them" in capsys.readouterr().err
    joined, report = imported("--join-words")
    assert joined == [("HOLY CROSS", "LOCATION"), ("July 29th", "DATE"), ("10/29", "DATE"), ("10/30", "DATE"),
                      ("Kessler-Adventist", "LOCATION"), ("Boston", "LOCATION")]
    assert report["word_parts_joined"] == {"LOCATION": 2, "DATE": 1}
    only_places, _ = imported("--join-words", "LOCATION")
    assert ("July", "DATE") in only_places and ("HOLY CROSS", "LOCATION") in only_places
    assert data_main(["import", str(path), "--format", "jsonl", "--label-map", mapping, "--out", str(tmp_path / "x"),
                      "--join-words", "PLACE"]) == 2
    assert "--join-words: PLACE is not a piiner type" in capsys.readouterr().err


def test_lists_hold_the_names_the_labels_always_mark_and_the_recognizers_option_reads_them(tmp_path, capsys):
    from piiner.snapshot import load_evidence

    def note(group, text, *labelled):
        spans = [{"start": text.index(w), "end": text.index(w) + len(w), "label": "LOCATION"} for w in labelled]
        return {"text": text, "spans": spans, "group": group, "labelled_types": ["LOCATION", "PERSON"]}

    records = [note("p1", "TO QUARTERMAIN 2 AT 4PM", "QUARTERMAIN"), note("p2", "back from Quartermain", "Quartermain"),
               note("p2", "called quartermain", "quartermain"), note("p3", "from Harbor Hosp", "Harbor"),
               note("p4", "HARBOR ED", "HARBOR"), note("p4", "Harbor again", "Harbor"),
               note("p5", "harbor seal on tv"), note("p5", "a harbor view"),  # unlabelled twice: 3 of 5
               *(note("p6", "Zed unit", "Zed") for _ in range(4)),  # one group only
               note("p7", "seen at Union", "Union"), note("p8", "UNION HOSP", "UNION")]  # twice, in two groups
    data = tmp_path / "notes.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in records))
    out = tmp_path / "lists.yaml"
    assert data_main(["lists", str(data), "--out", str(out)]) == 0
    assert load_evidence(str(out)) == {"deny_list": {"LOCATION": ["quartermain", "union"]}}
    assert "'quartermain': LOCATION, 3 / 3, 2" in out.read_text()
    assert data_main(["lists", str(data), "--out", str(out), "--min-precision", "0.6", "--min-count", "3"]) == 0
    assert load_evidence(str(out))["deny_list"]["LOCATION"] == ["harbor", "quartermain"]
    with pytest.raises(SystemExit):
        data_main(["lists", str(data), "--out", str(out), "--types", "PLACE"])
    assert "--types: PLACE is not a piiner type" in capsys.readouterr().err
    for bad in ('{"text": "x"}', '{"text": "x", "spans": [{"start": 0, "end": 5, "label": "LOCATION"}]}'):
        (tmp_path / "bad.jsonl").write_text(bad + "\n")
        assert data_main(["lists", str(tmp_path / "bad.jsonl"), "--out", str(out)]) == 2
        assert "bad.jsonl:1: not a record with text and spans" in capsys.readouterr().err


def test_piiner_train_reads_an_import_whose_first_split_has_no_span_at_all(tmp_path):
    # Most notes hold no PII: a split of such notes is still a split. Its spans column, read alone, has no type to
    # give; the next split's spans must not be cast to that nothing.
    path = tmp_path / "notes.jsonl"
    with path.open("w") as f:
        for patient in range(40):
            labelled = patient % 2 == 0
            f.write(json.dumps({"patient": patient, "text": "SEEN BY DR. SMITH ON 7/22." if labelled else "NO PHI.",
                                "spans": [{"start": 12, "end": 17, "label": "Name"}] if labelled else []}) + "\n")
    out = tmp_path / "out"
    assert data_main(["import", str(path), "--format", "jsonl", "--label-map", write_map(tmp_path), "--out", str(out),
                      "--group-by", "patient"]) == 0
    train = [json.loads(line) for line in (out / "train.jsonl").read_text().splitlines()]
    (out / "train.jsonl").write_text("".join(json.dumps({**r, "spans": []}) + "\n" for r in train))
    loaded = load_records(types.SimpleNamespace(dataset=str(out), train_split="train", validation_split="validation",
                                                test_split="test"))
    assert loaded["train"].num_rows == len(train) and not any(loaded["train"]["spans"])
    test_rows = [json.loads(line) for line in (out / "test.jsonl").read_text().splitlines()]
    assert [[(s["start"], s["end"], s["label"]) for s in spans] for spans in loaded["test"]["spans"]] == [
        [(s["start"], s["end"], s["label"]) for s in r["spans"]] for r in test_rows]
    assert any(loaded["test"]["spans"])
