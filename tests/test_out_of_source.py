"""The out-of-source table reads the reports a sweep wrote, beside the in-source ones, and says what is missing."""

import json
import os

import pytest

from out_of_source import main


def _report(f1, n_texts, compare=None):
    overall = {"precision": f1, "recall": f1, "f1": f1}
    report = {"overall": overall, "meta": {"n_texts": n_texts}}
    if compare:
        report["compare"] = {name: {"overall": {"f1": value}} for name, value in compare.items()}
    return report


def test_table_puts_out_of_source_beside_in_source_and_baselines(tmp_path, capsys):
    oos, ref = tmp_path / "oos", tmp_path / "ref"
    oos.mkdir(), ref.mkdir()
    (oos / "eval_variant_0_btc.json").write_text(json.dumps(_report(0.61, 948, {"presidio": 0.4, "rampart": 0.3,
                                                                                 "regex": 0.0})))
    (oos / "eval_variant_0_gum.json").write_text(json.dumps(_report(0.55, 83)))
    (oos / "eval_variant_1_btc.json").write_text(json.dumps(_report(0.1, 948)))  # another variant: not this table
    (ref / "eval_btc.json").write_text(json.dumps(_report(0.72, 948)))
    main(["table", str(oos), "--prefix", "eval_variant_0_", "--in-source", str(ref)])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == ("| source | texts | piiner out of source F1 | piiner in source F1 | Presidio + spaCy F1 | "
                        "Rampart F1 | regex F1 |")
    assert lines[2:] == ["| btc | 948 | 0.610 (0.610 / 0.610) | 0.720 | 0.400 | 0.300 | 0.000 |",
                         "| gum | 83 | 0.550 (0.550 / 0.550) | - | - | - | - |"]


def test_table_reads_a_relaxed_scheme_and_marks_reports_without_it(tmp_path, capsys):
    relaxed = dict(_report(0.44, 121, {"presidio": 0.2}),
                   relaxed={"ent_type": {"precision": 0.52, "recall": 0.65, "f1": 0.58}})
    relaxed["compare"]["presidio"]["relaxed"] = {"ent_type": {"f1": 0.3}}
    (tmp_path / "eval_sec_filings.json").write_text(json.dumps(relaxed))
    (tmp_path / "eval_btc.json").write_text(json.dumps(_report(0.7, 948)))  # written before relaxed matching
    main(["table", str(tmp_path), "--scheme", "ent_type"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("| source | texts | piiner out of source F1 (right type, any overlap) |")
    assert lines[2:] == ["| btc | 948 | - | - | - | - |",
                         "| sec_filings | 121 | 0.580 (0.520 / 0.650) | 0.300 | - | - |"]


def test_table_skips_files_that_are_not_reports(tmp_path, capsys):
    (tmp_path / "eval_btc.json").write_text(json.dumps(_report(0.7, 948)))
    (tmp_path / "eval_results.json").write_text(json.dumps({"eval_loss": 1.0}))  # what the Trainer writes
    main(["table", str(tmp_path)])
    assert capsys.readouterr().out.splitlines()[2:] == ["| btc | 948 | 0.700 (0.700 / 0.700) | - | - | - |"]


@pytest.mark.parametrize("command", [["table", "{missing}"], ["table", "{here}", "--in-source", "{missing}"],
                                     ["ablation-table", "{missing}"], ["unscored-table", "{missing}"],
                                     ["redaction-table", "{missing}"], ["rescore", "{missing}"],
                                     ["halves", "{missing}", "--data", "gold.jsonl"]])
def test_a_folder_that_is_not_there_is_named_in_one_line(tmp_path, capsys, command):
    """A typo in a folder: one line naming it (it was a traceback from os.listdir, and a mistyped --in-source gave a
    column of "-" as if the in-source model had no reports)."""
    (tmp_path / "eval_btc.json").write_text(json.dumps(_report(0.7, 948)))
    argv = [a.format(missing=tmp_path / "runs" / "oos-ner", here=tmp_path) for a in command]
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2 and f"{tmp_path / 'runs' / 'oos-ner'}: no such folder" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["ablation", "leave-one-out"])
@pytest.mark.parametrize("change, named", [({"--config": "{tmp}/configs/out-of-sorce.yaml"}, "out-of-sorce.yaml: no "),
                                           ({"--held-out": "btc,wikigld"}, "--held-out names wikigld")])
def test_a_sweep_with_a_missing_config_or_an_unknown_held_out_source_stops_before_training(
        tmp_path, monkeypatch, capsys, command, change, named):
    import out_of_source as oos

    monkeypatch.setattr(oos, "trained_without", lambda *a, **k: pytest.fail("a model was trained"))
    (tmp_path / "oos.yaml").write_text("seed: 0\n")
    options = {"--sources": "synthetic,btc,wikigold", "--held-out": "btc,wikigold", "--config": str(tmp_path / "oos.yaml"),
               "--data": str(tmp_path), "--out": str(tmp_path / "out")}
    options.update({k: v.format(tmp=tmp_path) for k, v in change.items()})
    with pytest.raises(SystemExit) as exited:
        main([command, *(x for pair in options.items() for x in pair)])
    assert exited.value.code == 2 and named in capsys.readouterr().err


def test_unscored_table_gives_each_systems_other_types_per_1000_words(tmp_path, capsys):
    def unscored(spans, per_type=None):
        return {"spans": spans, "words": 2000, "per_1k_words": spans / 2, "per_type": per_type or {}}

    report = _report(0.7, 948, {"presidio": 0.4, "rampart": 0.3})
    report["unscored"] = unscored(30, {"PASSWORD": 12, "DATE": 8, "RELIGION": 5, "AGE": 3, "PIN": 1, "URL": 1})
    report["compare"]["presidio"]["unscored"] = unscored(50)
    report["compare"]["rampart"]["unscored"] = unscored(4)
    (tmp_path / "eval_btc.json").write_text(json.dumps(report))
    (tmp_path / "eval_synthetic.json").write_text(json.dumps(_report(0.9, 100)))  # scored on every type: no row
    main(["unscored-table", str(tmp_path)])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "| source | words | piiner | Presidio + spaCy | Rampart | regex | piiner's commonest other types |"
    assert lines[2:] == ["| btc | 2,000 | 15.0 | 25.0 | 2.0 | - | PASSWORD 12, DATE 8, RELIGION 5, AGE 3, PIN 1 |"]


def test_ablation_table_has_a_row_per_variant_run(tmp_path, capsys):
    (tmp_path / "eval_variant_0_btc.json").write_text(json.dumps(_report(0.61, 948)))
    (tmp_path / "eval_variant_0_gum.json").write_text(json.dumps(_report(0.55, 83)))
    (tmp_path / "eval_variant_2_btc.json").write_text(json.dumps(_report(0.52, 948)))
    main(["ablation-table", str(tmp_path)])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "| variant | btc | gum |"
    assert lines[2].endswith("| 0.610 | 0.550 |") and lines[2].startswith("| piiner (char CNN + gate + CRF")
    assert lines[3] == "| no char CNN | 0.520 | - |" and len(lines) == 4
    # every document of a held-out source (whole_*), read apart from its test split
    (tmp_path / "whole_variant_0_btc.json").write_text(json.dumps(_report(0.64, 2396)))
    main(["ablation-table", str(tmp_path), "--scored", "whole"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "| variant | btc |" and lines[2].endswith("| 0.640 |") and len(lines) == 3


def test_ablation_trains_a_model_per_seed_and_the_table_gives_mean_and_range(tmp_path, monkeypatch, capsys):
    import out_of_source as oos

    trained = []

    def fake_trained_without(args, name, held_out, extra=()):
        trained.append((name, list(extra)))
        (tmp_path / name).mkdir()
        return str(tmp_path / name)

    def fake_evaluate(model, data, source, out, baselines=(), split="test"):
        f1 = {"variant_2": 0.50, "variant_2_seed7": 0.54, "variant_2_seed9": 0.52}[os.path.basename(model)]
        (tmp_path / os.path.basename(out)).write_text(json.dumps(_report(f1, 10 if split == "test" else 40)))

    halved = []
    monkeypatch.setattr(oos, "trained_without", fake_trained_without)
    monkeypatch.setattr(oos, "evaluate_source", fake_evaluate)
    monkeypatch.setattr(oos, "score_halves", lambda whole, data: halved.append(os.path.basename(whole)))
    config = tmp_path / "c.yaml"
    config.write_text("seed: 42\nmax_steps: 10\n")
    main(["ablation", "--sources", "a,btc", "--held-out", "btc", "--also", "", "--config", str(config), "--data", "d",
          "--out", str(tmp_path), "--variants", "2", "--train-seeds", "42,7,9"])
    # The config's seed keeps the plain name (an earlier run without --train-seeds is reused).
    assert trained == [("variant_2", ["--fusion", "none"]), ("variant_2_seed7", ["--fusion", "none", "--seed", "7"]),
                       ("variant_2_seed9", ["--fusion", "none", "--seed", "9"])]
    # each whole-corpus report is also scored on the two halves of its documents
    assert halved == ["whole_variant_2_btc.json", "whole_variant_2_seed7_btc.json", "whole_variant_2_seed9_btc.json"]
    capsys.readouterr()
    main(["ablation-table", str(tmp_path)])
    assert capsys.readouterr().out.splitlines()[2] == "| no char CNN | 0.520 (0.500-0.540, 3 seeds) |"
    main(["table", str(tmp_path), "--prefix", "eval_variant_2_"])  # the seeds' runs are runs of btc, not sources
    assert capsys.readouterr().out.splitlines()[2:] == ["| btc | 10 | 0.520 (0.500-0.540, 3 runs) | - | - | - |"]
    # The held-out source was also scored whole, every split of it (the fake gives it 40 texts).
    main(["table", str(tmp_path), "--prefix", "whole_variant_2_seed9_"])
    assert capsys.readouterr().out.splitlines()[2:] == ["| btc | 40 | 0.520 (0.520 / 0.520) | - | - | - |"]


def test_redaction_table_gives_each_system_the_gold_spans_hidden_and_the_characters_redacted(tmp_path, capsys):
    """Two runs of one draw: piiner's mean and range; the baselines from the run that scored them; a report written
    before the measure shows "-", not a zero."""
    def coverage(hidden, redacted):
        return {"span_recall": hidden, "redacted_share": redacted}

    for seed, (hidden, redacted) in ((42, (0.8, 0.10)), (43, (0.7, 0.12))):
        report = dict(_report(0.6, 948, {"presidio": 0.4} if seed == 42 else None), redaction=coverage(hidden, redacted))
        if seed == 42:
            report["compare"]["presidio"]["redaction"] = coverage(0.5, 0.2)
        (tmp_path / f"report_variant_0_seed{seed}_btc.json").write_text(json.dumps(report))
    (tmp_path / "report_variant_0_seed42_gum.json").write_text(json.dumps(_report(0.5, 83)))
    nothing = dict(_report(0.0, 5, {"regex": 0.0}), redaction=coverage(None, 0.01))  # no gold span to hide
    nothing["compare"]["regex"]["redaction"] = coverage(None, 0.0)
    (tmp_path / "report_variant_0_seed42_plain.json").write_text(json.dumps(nothing))
    main(["redaction-table", str(tmp_path), "--prefix", "report_variant_0_"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == ("| source | texts | piiner: gold spans hidden | piiner: characters redacted | "
                        "Presidio + spaCy: hidden / redacted | Rampart: hidden / redacted | regex: hidden / redacted |")
    assert lines[2:] == ["| btc | 948 | 0.750 (0.700-0.800, 2 runs) | 0.110 (0.100-0.120, 2 runs) | 0.500 / 0.200 | - "
                         "| - |", "| gum | 83 | - | - | - | - | - |", "| plain | 5 | - | 0.010 | - | - | - / 0.000 |"]


def test_table_of_several_folders_gives_each_source_the_mean_and_range_of_its_runs(tmp_path, capsys):
    """Runs on two draws of the generated corpus, two seeds each: one row per source, the baselines (the same on
    every run's rows) from the run that scored them."""
    draws = [tmp_path / "draw2", tmp_path / "draw3"]
    for draw, f1s in zip(draws, ((0.60, 0.62), (0.64, 0.58))):
        draw.mkdir()
        for seed, f1 in zip((42, 43), f1s):
            compare = {"presidio": 0.4, "regex": 0.0} if (draw.name, seed) == ("draw3", 43) else None
            report = dict(_report(f1, 4657, compare), interval={"documents": 4657, "f1": [f1 - 0.01, f1 + 0.01]})
            (draw / f"report_variant_0_seed{seed}_btc.json").write_text(json.dumps(report))
    main(["table", *map(str, draws), "--prefix", "report_variant_0_"])
    lines = capsys.readouterr().out.splitlines()
    assert "interval" not in lines[0]  # one run's interval says nothing of four runs' mean
    assert lines[2:] == ["| btc | 4,657 | 0.610 (0.580-0.640, 4 runs) | 0.400 | - | 0.000 |"]
    (draws[1] / "report_variant_0_seed43_btc.json").write_text(json.dumps(_report(0.6, 4000)))  # other rows
    with pytest.raises(SystemExit, match=r"btc: its runs scored different numbers of texts \(\[4000, 4657\]\)"):
        main(["table", *map(str, draws), "--prefix", "report_variant_0_"])


def test_tables_name_what_the_baselines_ran(tmp_path, capsys):
    """Presidio's figures depend on its spaCy pipeline: under a table, what each baseline ran, from the reports that
    recorded it (not a half's report scored from predictions saved before they named it), every system named where
    runs differ."""
    draws = [tmp_path / "draw2", tmp_path / "draw3"]
    for draw, spacy in zip(draws, ("en_core_web_md 3.8.0", "en_core_web_sm 3.8.0")):
        draw.mkdir()
        whole = _report(0.6, 9315, {"presidio": 0.4})
        whole["compare"]["presidio"]["system"] = f"Presidio 2.2.366, spaCy {spacy}"
        (draw / "whole_variant_0_btc.json").write_text(json.dumps(whole))
        (draw / "report_variant_0_btc.json").write_text(json.dumps(_report(0.6, 4657, {"presidio": 0.4})))
    main(["table", str(draws[0]), "--prefix", "report_variant_0_"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[2:] == ["| btc | 4,657 | 0.600 (0.600 / 0.600) | 0.400 | - | - |", "",
                         "Baselines as run: Presidio + spaCy: Presidio 2.2.366, spaCy en_core_web_md 3.8.0."]
    main(["redaction-table", *map(str, draws), "--prefix", "report_variant_0_"])
    assert capsys.readouterr().out.splitlines()[-1] == ("Baselines as run: Presidio + spaCy: Presidio 2.2.366, spaCy "
                                                        "en_core_web_md 3.8.0 and Presidio 2.2.366, spaCy "
                                                        "en_core_web_sm 3.8.0.")


def test_halves_rescore_each_whole_report_on_both_halves_of_its_documents_from_its_saved_predictions(tmp_path, capsys):
    """A recipe change is judged on the development half; the report half's figures are the ones quoted."""
    rows = [{"id": f"t{i}", "group": f"doc{i // 2}", "source": "btc", "text": f"Ann Lee met Bo Kim {i}.",
             "spans": [{"start": 0, "end": 7, "label": "PERSON"}, {"start": 11, "end": 17, "label": "PERSON"}]}
            for i in range(12)]
    gold = tmp_path / "gold.jsonl"
    gold.write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "_predictions").mkdir()
    (tmp_path / "_predictions" / "whole_variant_0_btc.jsonl").write_text("".join(
        json.dumps({"id": r["id"], "spans": r["spans"][: 1 + i % 2]}) + "\n" for i, r in enumerate(rows)))
    whole = {"overall": {"f1": 0.8}, "meta": {"source": "btc", "split": "train,validation,test", "types": ["PERSON"],
                                              "data": "elsewhere/data", "n_texts": 12}}
    (tmp_path / "whole_variant_0_btc.json").write_text(json.dumps(whole))
    main(["halves", str(tmp_path), "--data", str(gold)])
    scored = {h: json.loads((tmp_path / f"{h}_variant_0_btc.json").read_text()) for h in ("development", "report")}
    assert sorted(r["meta"]["n_texts"] for r in scored.values()) == [6, 6]
    assert sum(r["overall"]["tp"] for r in scored.values()) == 18 and all(
        r["overall"]["fp"] == 0 and r["meta"]["half"] == h for h, r in scored.items())
    capsys.readouterr()
    main(["table", str(tmp_path), "--prefix", "development_variant_0_"])
    assert capsys.readouterr().out.splitlines()[2].startswith("| btc | 6 | ")
    # a report without its predictions: one line naming it, and no half of any report rewritten
    (tmp_path / "whole_variant_1_btc.json").write_text(json.dumps(whole))
    for half in scored:
        (tmp_path / f"{half}_variant_0_btc.json").unlink()
    with pytest.raises(SystemExit, match="no saved predictions .* behind whole_variant_1_btc.json"):
        main(["halves", str(tmp_path), "--data", str(gold)])
    assert not list(tmp_path.glob("development_*")) and not list(tmp_path.glob("report_*"))


def test_rescore_scores_a_finished_runs_reports_again_from_the_saved_predictions_of_every_system(tmp_path, capsys):
    """After a change to the scoring: each report with its predictions saved, and the systems it was compared with,
    get the new figures; strict ones come back the same. A report without saved predictions is left as it was and
    named, not passed over in silence. A compared system whose predictions are gone stops it before any report is
    rewritten."""
    rows = [{"id": f"t{i}", "group": f"doc{i}", "source": "btc", "text": f"Ann Lee met Bo Kim {i}.",
             "spans": [{"start": 0, "end": 7, "label": "PERSON"}, {"start": 11, "end": 17, "label": "PERSON"}]}
            for i in range(4)]
    gold = tmp_path / "gold.jsonl"
    gold.write_text("".join(json.dumps(r) + "\n" for r in rows))
    saved = tmp_path / "_predictions"
    saved.mkdir()
    (saved / "btc.jsonl").write_text("".join(json.dumps({"id": r["id"], "spans": r["spans"][:1]}) + "\n" for r in rows))
    (saved / "btc.regex.jsonl").write_text("".join(json.dumps({"id": r["id"], "spans": []}) + "\n" for r in rows))
    old = {"overall": {"f1": 0.667}, "compare": {"regex": {"overall": {"f1": 0.0}}},
           "meta": {"data": str(gold), "source": "btc", "split": "test", "types": ["PERSON"], "compare": ["regex"],
                    "n_texts": 4}}
    (tmp_path / "eval_btc.json").write_text(json.dumps(old))
    (tmp_path / "eval_gum.json").write_text(json.dumps(old))  # scored elsewhere: no predictions beside it
    main(["rescore", str(tmp_path)])
    assert "reports left as they were, no predictions saved in _predictions/ (1): eval_gum.json" in capsys.readouterr().err
    assert json.loads((tmp_path / "eval_gum.json").read_text()) == old
    new = json.loads((tmp_path / "eval_btc.json").read_text())
    assert new["overall"]["f1"] == pytest.approx(2 / 3) and new["redaction"]["hidden_spans"] == 4
    assert new["compare"]["regex"]["overall"]["f1"] == 0 and new["compare"]["regex"]["redaction"]["hidden_spans"] == 0
    (saved / "btc.regex.jsonl").unlink()
    (tmp_path / "eval_btc.json").write_text(json.dumps(old))
    with pytest.raises(SystemExit, match="the predictions of regex, which it was compared with, are not saved"):
        main(["rescore", str(tmp_path)])
    assert json.loads((tmp_path / "eval_btc.json").read_text()) == old


@pytest.mark.parametrize("saved", [False, True])
def test_halves_score_the_baselines_of_the_whole_report_on_each_half(tmp_path, saved):
    """The figures quoted are the report half's: the baselines the whole corpus was compared with are scored on
    the same half's rows, in the same run. Where the whole run kept a baseline's predictions beside the model's
    (`--save-predictions`), the halves score those instead of running it again (once per corpus, not three times)."""
    rows = [{"id": f"t{i}", "group": f"doc{i}", "source": "presidio", "text": f"Card 4111 1111 1111 1111, call {i}.",
             "spans": [{"start": 5, "end": 24, "label": "CREDIT_CARD"}]} for i in range(8)]
    gold = tmp_path / "gold.jsonl"
    gold.write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "_predictions").mkdir()
    nothing = "".join(json.dumps({"id": r["id"], "spans": []}) + "\n" for r in rows)
    (tmp_path / "_predictions" / "whole_variant_0_presidio.jsonl").write_text(nothing)
    if saved:  # what the regex "found" on the whole corpus: here nothing, where running it finds every card
        (tmp_path / "_predictions" / "whole_variant_0_presidio.regex.jsonl").write_text(nothing)
    whole = {"overall": {"f1": 0.0}, "compare": {"regex": {"overall": {"f1": 0.0 if saved else 1.0}}},
             "meta": {"source": "presidio", "split": "train,validation,test", "n_texts": 8}}
    (tmp_path / "whole_variant_0_presidio.json").write_text(json.dumps(whole))
    main(["halves", str(tmp_path), "--data", str(gold)])
    for half in ("development", "report"):
        scored = json.loads((tmp_path / f"{half}_variant_0_presidio.json").read_text())
        assert scored["meta"]["n_texts"] == 4 and scored["overall"]["tp"] == 0 and set(scored["compare"]) == {"regex"}
        assert scored["compare"]["regex"]["overall"]["tp"] == (0 if saved else 4)  # each half's four cards
    with pytest.raises(SystemExit):  # a baseline that is not one: named before anything is scored
        main(["halves", str(tmp_path), "--data", str(gold), "--compare", "spacy"])


def test_table_gives_each_f1_its_interval_over_documents_where_the_report_has_one(tmp_path, capsys):
    with_interval = dict(_report(0.41, 121), interval={"level": 0.95, "resamples": 1000, "documents": 3,
                                                       "f1": [0.25, 0.58]})
    (tmp_path / "eval_sec_filings.json").write_text(json.dumps(with_interval))
    (tmp_path / "eval_btc.json").write_text(json.dumps(_report(0.7, 948)))  # written before the intervals were
    main(["table", str(tmp_path)])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("| source | texts | piiner out of source F1 | F1 95% interval (documents) |")
    assert lines[2:] == ["| btc | 948 | 0.700 (0.700 / 0.700) | - | - | - | - |",
                         "| sec_filings | 121 | 0.410 (0.410 / 0.410) | 0.250-0.580 (3) | - | - | - |"]


def test_halves_keep_a_comparison_with_a_predictions_file_and_stop_where_that_file_is_gone(tmp_path):
    """A whole report compared with another run's predictions (`--compare old=FILE.jsonl`) keeps that comparison in
    both halves; a compared file that is gone cannot be run again like a baseline, so no half of any report is
    written."""
    rows = [{"id": f"t{i}", "group": f"doc{i}", "source": "btc", "text": f"Ann Lee met Bo Kim {i}.",
             "spans": [{"start": 0, "end": 7, "label": "PERSON"}]} for i in range(8)]
    gold = tmp_path / "gold.jsonl"
    gold.write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "_predictions").mkdir()
    (tmp_path / "_predictions" / "whole_btc.jsonl").write_text("".join(
        json.dumps({"id": r["id"], "spans": r["spans"]}) + "\n" for r in rows))
    old = tmp_path / "old.jsonl"
    old.write_text("".join(json.dumps({"id": r["id"], "spans": []}) + "\n" for r in rows))
    whole = {"overall": {"f1": 1.0}, "compare": {"old": {"overall": {"f1": 0.0}}},
             "meta": {"source": "btc", "split": "train,validation,test", "types": ["PERSON"], "n_texts": 8,
                      "compare": [f"old={old}"]}}
    (tmp_path / "whole_btc.json").write_text(json.dumps(whole))
    main(["halves", str(tmp_path), "--data", str(gold)])
    for half in ("development", "report"):
        scored = json.loads((tmp_path / f"{half}_btc.json").read_text())
        assert scored["overall"]["tp"] == 4 and scored["compare"]["old"]["overall"]["tp"] == 0
        (tmp_path / f"{half}_btc.json").unlink()
    # another whole report, scored after this one, compared with a file that is gone: neither report's halves written
    (tmp_path / "_predictions" / "whole_zz_btc.jsonl").write_text(
        (tmp_path / "_predictions" / "whole_btc.jsonl").read_text())
    gone = dict(whole, meta=dict(whole["meta"], compare=[f"gone={tmp_path / 'gone.jsonl'}"]))
    (tmp_path / "whole_zz_btc.json").write_text(json.dumps(gone))
    with pytest.raises(SystemExit, match="the predictions of gone, which it was compared with, are not saved"):
        main(["halves", str(tmp_path), "--data", str(gold)])
    assert not list(tmp_path.glob("development_*")) and not list(tmp_path.glob("report_*"))
