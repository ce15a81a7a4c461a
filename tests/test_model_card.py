"""The model card renders, its Hub metadata parses into a model-index, and the plot is written."""

import json

import pytest
from huggingface_hub import ModelCard

from conftest import tiny_bert_config
from piiner.evaluation.metrics import span_metrics
from piiner.evaluation.model_card import render_model_card, validate_card, write_model_card
from piiner.hub.configuration_piiner import MIN_TRANSFORMERS, PiiNerConfig


def _report(gold, pred, **meta):
    report = span_metrics(gold, pred)
    report["meta"] = {"split": "test", "n_texts": len(gold), **meta}
    return json.loads(json.dumps(report))  # as read back from the JSON file: tier keys become strings


GOLD = [[(0, 4, "PERSON"), (10, 21, "SSN")], [(3, 9, "EMAIL")]]
REPORTS = {
    "synthetic test": dict(
        _report(GOLD, [[(0, 4, "PERSON"), (10, 21, "SSN")], []], model="runs/q", source="synthetic",
                command="piiner-evaluate --model runs/q --data data/q --source synthetic --compare regex"),
        compare={"regex": span_metrics(GOLD, [[(10, 21, "SSN")], []])}),
    "presidio-research held-out (Presidio)": _report(GOLD, [[(0, 4, "PERSON")], []], baseline="presidio",
                                                     command="piiner-evaluate --baseline presidio ..."),
}


@pytest.fixture(scope="module")
def config():
    return PiiNerConfig(encoder_config=tiny_bert_config())


def test_card_metadata_parses_into_a_model_index_of_the_model_only(config):
    content = render_model_card(config, REPORTS, data_sources=["synthetic", "presidio", "wnut17"],
                                base_model="sentence-transformers/all-MiniLM-L6-v2", repo_id="acme/piiner-small",
                                revision="0123abc")
    card = ModelCard(content, ignore_metadata_errors=False)
    data = card.data.to_dict()
    assert (data["license"], data["language"], data["library_name"], data["pipeline_tag"]) == (
        "apache-2.0", "en", "transformers", "token-classification")
    assert data["base_model"] == "sentence-transformers/all-MiniLM-L6-v2" and data["datasets"] == ["leondz/wnut_17"]
    results = {(r.dataset_name, r.metric_type): r.metric_value for r in card.data.eval_results}
    # 2 of 3 gold spans found, no false positive: P 1, R 2/3, F1 0.8, F2 0.7143. The baseline is not in it.
    assert results == {("synthetic test", "precision"): 1.0, ("synthetic test", "recall"): 0.6667,
                       ("synthetic test", "f1"): 0.8, ("synthetic test", "f2"): 0.7143}
    assert card.data.model_name == "piiner-small"
    validate_card(content)


def test_card_body_has_the_sections_a_user_needs(config):
    content = render_model_card(config, REPORTS, data_sources=["presidio", {"name": "my corpus", "license": "MIT"}],
                                base_model="sentence-transformers/all-MiniLM-L6-v2", repo_id="acme/piiner-small",
                                revision="0123abc")
    body = ModelCard(content).text
    for needle in ("## Labels and tiers", "## Intended use and limits", "## Training data", "## Evaluation",
                   "| 1 | 0.98 | SSN, CREDIT_CARD", "microsoft/presidio-research synthetic sentences | MIT",
                   "my corpus | MIT", 'repo, revision = "acme/piiner-small", "0123abc"',
                   "piiner-evaluate --model runs/q --data data/q --source synthetic",
                   "piiner-evaluate --baseline presidio", "baseline: presidio", "piiner_metrics.png",
                   "| synthetic test | baseline: regex (same run) | 1.000 | 0.333 | 0.500 |",
                   f"`transformers>={MIN_TRANSFORMERS}`"):
        assert needle in body, needle


def test_card_says_what_a_set_scored_on_some_types_cannot_see(config):
    report = _report(GOLD, [[(0, 4, "PERSON")], []], model="runs/q", source="btc")
    report["unscored"] = {"spans": 7, "words": 2000, "per_1k_words": 3.5, "per_type": {"PASSWORD": 5, "DATE": 2}}
    report["compare"] = {"presidio": dict(span_metrics(GOLD, [[], []]), unscored={"spans": 20, "words": 2000,
                                                                                   "per_1k_words": 10.0,
                                                                                   "per_type": {"DATE": 20}})}
    report["interval"] = {"level": 0.95, "resamples": 1000, "documents": 2, "f1": [0.0, 0.667]}
    report["redaction"] = {"span_recall": 2 / 3}  # the presidio report was written before the measure
    body = ModelCard(render_model_card(config, {"btc test": report}, data_sources=["synthetic"])).text
    assert "| btc test | this model | 1.000 | 0.333 | 0.500 | 0.000-0.667 (2) | 0.385 | 3 | 2 | 3.5 | 0.667 |" in body
    assert "| btc test | baseline: presidio (same run) | 0.000 | 0.000 | 0.000 | - | 0.000 | 3 | 2 | 10.0 | - |" in body
    assert "Spans of types this set neither scores nor labels: 7 (3.5 per 1,000 words)" in body and "PASSWORD 5, DATE 2" in body


def test_unknown_data_source_needs_a_license(config):
    with pytest.raises(ValueError, match="license"):
        render_model_card(config, REPORTS, data_sources=["somewhere"], base_model="x/y")


def test_validate_card_rejects_missing_license():
    with pytest.raises(ValueError, match="license"):
        validate_card("---\nlanguage: en\nlibrary_name: transformers\npipeline_tag: token-classification\n---\n# x\n")


def test_write_model_card_writes_readme_card_and_plot(tmp_path, config):
    content = write_model_card(tmp_path, config, REPORTS, data_sources=["synthetic", "nvidia/Nemotron-PII"],
                               base_model="x/y", training_summary={"optimizer steps": 120})
    assert "- optimizer steps: 120" in content and "nvidia/Nemotron-PII | CC-BY-4.0" in content
    assert (tmp_path / "README.md").read_text() == content == (tmp_path / "model_card.md").read_text()
    png = (tmp_path / "piiner_metrics.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000


def test_bare_span_metrics_reports_from_training_render(config, tmp_path):
    # As the training loop holds them: no meta, integer tier keys.
    reports = {"validation": span_metrics(GOLD, GOLD)}
    content = write_model_card(tmp_path, config, reports, data_sources=["wnut17"], base_model="x/y")
    card = validate_card(content)
    assert {r.metric_type: r.metric_value for r in card.data.eval_results}["f1"] == 1.0
    assert "(command not recorded)" in content


def test_card_names_what_a_baseline_ran(config):
    """Presidio's figures depend on its spaCy pipeline (the small one scores points lower): the card says which ran,
    where the report recorded it."""
    ran = "Presidio 2.2.366, spaCy en_core_web_md 3.8.0"
    compared = dict(_report(GOLD, GOLD, model="runs/q"), compare={"presidio": dict(span_metrics(GOLD, [[], []]),
                                                                                  system=ran)})
    alone = _report(GOLD, [[], []], baseline="presidio", system=ran)
    body = ModelCard(render_model_card(config, {"btc test": compared, "btc alone": alone},
                                       data_sources=["synthetic"])).text
    assert f"| btc test | baseline: presidio (same run; {ran}) | 0.000 |" in body
    assert f"| btc alone | baseline: presidio ({ran}) | 0.000 |" in body


def test_reports_added_later_join_the_training_card(tmp_path, config, capsys):
    """`python -m piiner.evaluation.model_card DIR --report NAME=FILE` adds evaluations run after training to its card,
    keeping the training run's sections."""
    from piiner.evaluation.model_card import main

    config.save_pretrained(tmp_path)
    write_model_card(tmp_path, config, {"validation": _report(GOLD, GOLD)}, data_sources=["synthetic"],
                     base_model="x/y", training_summary={"optimizer steps": 120})
    report = dict(_report(GOLD, [[(0, 4, "PERSON")], []], source="presidio",
                          command="piiner-evaluate --model m --data d --source presidio --compare presidio"),
                  compare={"presidio": span_metrics(GOLD, [[], []])})
    (tmp_path / "eval_presidio.json").write_text(json.dumps(report))
    main([str(tmp_path), "--report", f"presidio-research test={tmp_path / 'eval_presidio.json'}"])
    content = (tmp_path / "README.md").read_text()
    assert "- optimizer steps: 120" in content and "| validation | this model |" in content
    assert "| presidio-research test | this model | 1.000 | 0.333 |" in content
    assert "| presidio-research test | baseline: presidio (same run) | 0.000 |" in content
    assert "piiner-evaluate --model m --data d --source presidio --compare presidio" in content
    card = validate_card(content)
    assert {(r.dataset_name, r.metric_type) for r in card.data.eval_results} >= {("presidio-research test", "f1")}
    with pytest.raises(SystemExit):
        main([str(tmp_path), "--report", "no-equals-sign"])
    # a mistyped report or model folder: one line naming it, and the card as it was
    for argv, named in (([str(tmp_path), "--report", f"x={tmp_path / 'eval_presidoi.json'}"], "eval_presidoi.json"),
                        ([str(tmp_path / "runs"), "--report", f"x={tmp_path / 'eval_presidio.json'}"], "runs has no"),
                        # one name for two reports would keep the second only
                        ([str(tmp_path), "--report", f"x={tmp_path / 'eval_presidio.json'}", "--report",
                          f"x={tmp_path / 'eval_presidio.json'}"], "names 'x' twice")):
        with pytest.raises(SystemExit) as exited:
            main(argv)
        assert exited.value.code == 2 and named in capsys.readouterr().err
    assert (tmp_path / "README.md").read_text() == content


def test_lead_reports_open_the_results_table(tmp_path, config):
    """Out-of-source scores added with --lead come before the training run's own (in-source) rows."""
    from piiner.evaluation.model_card import main

    config.save_pretrained(tmp_path)
    write_model_card(tmp_path, config, {"validation": _report(GOLD, GOLD)}, data_sources=["synthetic"])
    (tmp_path / "oos.json").write_text(json.dumps(_report(GOLD, [[(0, 4, "PERSON")], []], source="btc")))
    main([str(tmp_path), "--lead", "--system", "same recipe, trained without btc", "--report",
          f"btc, out of source={tmp_path / 'oos.json'}"])
    content = (tmp_path / "README.md").read_text()
    row = "| btc, out of source | same recipe, trained without btc |"
    assert content.index(row) < content.index("| validation | this model |")
    # Another model's score is shown, never claimed in this model's model-index.
    datasets = {r.dataset_name for r in validate_card(content).data.eval_results}
    assert "validation" in datasets and "btc, out of source" not in datasets


def test_card_loads_everything_with_trust_remote_code(config):
    # AutoTokenizer reads the config before the tokenizer, and the config class is the repository's code: a
    # `from_pretrained` without trust_remote_code=True in the card stops a user's script at a y/N prompt.
    import re

    body = ModelCard(render_model_card(config, REPORTS, data_sources=["presidio"], repo_id="acme/piiner-small")).text
    calls = re.findall(r"(?:from_pretrained|pipeline)\((.*?)\)", body, flags=re.S)
    assert len(calls) >= 3
    assert all("trust_remote_code=True" in call for call in calls), calls


def test_the_card_states_each_types_decoding_rules_as_the_decode_reads_them(config):
    from piiner.hub.decoding_piiner import TYPE_CHECKS

    body = ModelCard(render_model_card(config, REPORTS, data_sources=["presidio"])).text
    section = body.split("## Decoding rules", 1)[1].split("\n## ", 1)[0]
    rows = {line.split(" | ")[0].strip("| "): line for line in section.splitlines() if line.startswith("| ")
            and not line.startswith(("| type", "|---"))}
    assert set(TYPE_CHECKS) <= set(rows)
    assert "Luhn" in rows["CREDIT_CARD"] and "holds no word of letters" in rows["SSN"]
    assert "no whitespace" in rows["EMAIL"] and "capitalised" in rows["PERSON"] and "line break" in rows[
        "STREET_ADDRESS"]
    assert "built-in recognizer" in rows["IBAN"]
    off = ModelCard(render_model_card(PiiNerConfig(encoder_config=tiny_bert_config(), builtin_recognizers=False,
                                                   capitalised_types=[]), REPORTS, data_sources=["presidio"])).text
    assert "built-in recognizer" not in off and "capitalised word" not in off
