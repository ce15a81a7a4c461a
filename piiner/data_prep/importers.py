"""Importing documents a user labelled in an annotation tool into a dataset folder `piiner-train` reads.

    piiner-data import export.json --format label-studio --label-map labels.yaml --out data/mine --group-by patient

Readers (each yields raw records `{id, text, spans: [{start, end, label, value?}], fields}` or a `Bad` row):

- ``label-studio``: the JSON export of the NER template (tasks with ``data.text`` and the ``labels`` results of
  their first annotation that was not cancelled);
- ``doccano``: JSONL with ``label: [[start, end, type], ...]`` (or ``entities`` with ``start_offset``,
  ``end_offset``, ``label``);
- ``brat``: a folder of ``NAME.txt`` with ``NAME.ann`` standoff (``T`` lines; a discontinuous span is a bad row);
- ``conll``: token and BIO tag columns, documents split at ``-DOCSTART-``;
- ``jsonl``: piiner's own records, ``{"text", "spans": [{"start", "end", "label"}]}``, other fields kept.

The label map (YAML or JSON) maps the tool's labels to piiner types, or to ``O`` for an entity of no PII type, or
to ``drop`` to leave it unlabelled. A label the map does not name stops the import with the list of such labels,
unless ``--unmapped drop``. The types the map names are the record's ``labelled_types``: what the labellers were
asked for. Everything else in the text stays unlabelled, not "no PII", so training does not unlearn it.

Records are split by group (``--group-by FIELD``: a patient, a customer, a file), never by record: the same hash
of the group name puts it in train, validation or test on every run. Every input row ends in a split or in
``import_report.json`` with its file, line and reason.
"""

import dataclasses
import json
import os
from collections import Counter

from piiner.hub.pii_schema import PII_TYPES

from piiner.options import load_data_file

from .audit import Audit
from .records import NOT_PII, clean_record, join_word_parts, word_parts
from .split import SPLITS, assign_splits

FORMATS = ("label-studio", "doccano", "brat", "conll", "jsonl")
DROP = "drop"


class ImportError_(ValueError):
    """The input or the label map cannot be used as given; the message says why."""


@dataclasses.dataclass
class Bad:
    where: str  # file:line
    reason: str


def load_label_map(path):
    """{tool label: piiner type, "O" or "drop"} from a YAML or JSON file of that mapping."""
    try:
        mapping = load_data_file(path, "label map")
    except ValueError as error:
        raise ImportError_(str(error)) from None
    if not isinstance(mapping, dict) or not mapping:
        raise ImportError_(f"label map {path}: must map each label to a piiner type, O or drop")
    bad = {k: v for k, v in mapping.items() if v not in (*PII_TYPES, NOT_PII, DROP)}
    if bad:
        first = next(iter(bad.items()))
        raise ImportError_(f"label map {path}: {first[0]!r} -> {first[1]!r} is not a piiner type, O or drop "
                           f"(types: {', '.join(PII_TYPES)})")
    return {str(k): v for k, v in mapping.items()}


# -- readers ------------------------------------------------------------------------------------------------------

def _text_rows(path):
    """`(line number, where, row)` for each JSON object with a text field of a JSONL file, or a `Bad` for a line that
    is not."""
    with open(path, encoding="utf-8-sig") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            where = f"{path}:{number}"
            try:
                row = json.loads(line)
            except json.JSONDecodeError as error:
                yield Bad(where, f"not JSON ({error.msg})")
                continue
            if not isinstance(row, dict) or not isinstance(row.get("text"), str):
                yield Bad(where, "no text field")
                continue
            yield number, where, row


def read_label_studio(path):
    try:
        with open(path, encoding="utf-8-sig") as f:
            tasks = json.load(f)
    except (OSError, ValueError) as error:
        raise ImportError_(f"{path}: not a Label Studio JSON export ({error})") from None
    for number, task in enumerate(tasks if isinstance(tasks, list) else [tasks], 1):
        where = f"{path}:task {number}"
        data = task.get("data") if isinstance(task, dict) else None
        if not isinstance(data, dict) or not isinstance(data.get("text"), str):
            yield Bad(where, "no data.text")
            continue
        annotations = [a for a in task.get("annotations") or () if not a.get("was_cancelled")]
        if not annotations:
            yield Bad(where, "no annotation that was not cancelled")
            continue
        spans = []
        for result in annotations[0].get("result") or ():
            value = result.get("value") or {}
            if result.get("type") != "labels" or not value.get("labels"):
                continue
            spans.append({"start": value.get("start"), "end": value.get("end"), "label": value["labels"][0],
                          "value": value.get("text")})
        yield {"id": task.get("id", number), "text": data["text"], "spans": spans, "fields": data, "where": where}


def read_doccano(path):
    for item in _text_rows(path):
        if isinstance(item, Bad):
            yield item
            continue
        number, where, row = item
        if "entities" in row:
            raw = [(e.get("start_offset"), e.get("end_offset"), e.get("label")) for e in row["entities"]]
        else:
            raw = row.get("label", row.get("labels")) or []
        try:
            spans = [{"start": s, "end": e, "label": lab} for s, e, lab in raw]
        except (TypeError, ValueError):
            yield Bad(where, "label must be a list of [start, end, type]")
            continue
        yield {"id": row.get("id", number), "text": row["text"], "spans": spans, "fields": row, "where": where}


def read_brat(folder):
    if not os.path.isdir(folder):
        raise ImportError_(f"{folder}: brat input is a folder of NAME.txt and NAME.ann files")
    names = sorted(n[:-4] for n in os.listdir(folder) if n.endswith(".txt"))
    if not names:
        raise ImportError_(f"{folder}: no .txt files")
    for name in names:
        txt, ann = os.path.join(folder, name + ".txt"), os.path.join(folder, name + ".ann")
        if not os.path.isfile(ann):
            yield Bad(txt, "no .ann file beside it")
            continue
        with open(txt, encoding="utf-8", newline="") as f:
            text = f.read()
        spans, bad = [], None
        with open(ann, encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                if not line.startswith("T"):
                    continue  # attributes, relations, notes: not spans
                try:
                    _, middle, value = line.rstrip("\n").split("\t", 2)
                    label, offsets = middle.split(" ", 1)
                except ValueError:
                    bad = Bad(f"{ann}:{number}", "not a brat T line (T1<TAB>LABEL START END<TAB>text)")
                    break
                if ";" in offsets:
                    bad = Bad(f"{ann}:{number}", "a discontinuous span: piiner spans are one stretch")
                    break
                start, end = offsets.split()
                spans.append({"start": int(start), "end": int(end), "label": label, "value": value})
        if bad:
            yield bad
            continue
        yield {"id": name, "text": text, "spans": spans, "fields": {"file": name}, "where": txt}


def read_conll(path):
    from .sources.conll import documents, join_tokens, parse_conll

    problems = []
    with open(path, encoding="utf-8-sig") as f:
        sentences = parse_conll(f, where=path, problems=problems)
    for problem in problems:
        yield Bad(problem.split(": ", 1)[0], problem.split(": ", 1)[1])
    for number, doc in enumerate(documents(sentences), 1):
        text, spans = "", []
        for sentence in doc:  # a sentence per line, its tokens joined as prose is written
            offset = len(text) + (1 if text else 0)
            text += ("\n" if text else "") + join_tokens([t for t, _ in sentence])[0]
            starts = [offset + s for s in join_tokens([t for t, _ in sentence])[1]]
            current = None
            for (token, tag), start in zip(sentence, starts):
                if tag.startswith("I-") and current and current["label"] == tag[2:]:
                    current["end"] = start + len(token)
                    continue
                current = None
                if tag != "O":
                    current = {"start": start, "end": start + len(token), "label": tag[2:]}
                    spans.append(current)
        yield {"id": f"doc{number}", "text": text, "spans": spans, "fields": {"document": number},
               "where": f"{path}:document {number}"}


def read_jsonl(path):
    for item in _text_rows(path):
        if isinstance(item, Bad):
            yield item
            continue
        number, where, row = item
        spans = row.get("spans")
        if not isinstance(spans, list) or not all(isinstance(s, dict) for s in spans):
            yield Bad(where, "spans must be a list of {start, end, label}")
            continue
        yield {"id": row.get("id", number), "text": row["text"], "spans": spans, "fields": row, "where": where}


READERS = {"label-studio": read_label_studio, "doccano": read_doccano, "brat": read_brat, "conll": read_conll,
           "jsonl": read_jsonl}


# -- the import ------------------------------------------------------------------------------------------------------

def import_documents(source, fmt, label_map, out_dir, group_by=None, unmapped="error", name="mine",
                     validation_fraction=0.1, test_fraction=0.2, join_words=()):
    """Read `source`, map its labels, split by group and write ``{train,validation,test}.jsonl`` and
    ``import_report.json`` into `out_dir`. Returns the report dict.

    `join_words`: the piiner types the tool labelled word by word; their parts apart by a word gap become one span
    (`records.join_word_parts`). The report counts, per type, the parts left apart (``word_parts_apart``) and joined
    (``word_parts_joined``), so an export of that kind shows itself."""
    if fmt not in READERS:
        raise ImportError_(f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    if unmapped not in ("error", "drop"):
        raise ImportError_(f"--unmapped must be error or drop, got {unmapped!r}")
    if not os.path.exists(source):
        raise ImportError_(f"{source}: no such file or folder")
    unknown = sorted(set(join_words) - set(PII_TYPES))
    if unknown:
        raise ImportError_(f"--join-words: {', '.join(unknown)} is not a piiner type (types: {', '.join(PII_TYPES)})")
    raw, bad = [], []
    for item in READERS[fmt](source):
        (bad if isinstance(item, Bad) else raw).append(item)
    labels = Counter(s.get("label") for r in raw for s in r["spans"])
    missing = sorted(str(label) for label in labels if str(label) not in label_map)
    if missing and unmapped == "error":
        raise ImportError_("labels the label map does not name: " + ", ".join(f"{m} ({labels[m]})" for m in missing)
                           + ". Map each to a piiner type, O or drop, or pass --unmapped drop")
    labelled = sorted({t for t in label_map.values() if t in PII_TYPES})
    audit, records = Audit(), []
    for item in raw:
        group = item["fields"].get(group_by) if group_by else item["id"]
        if group_by and group is None:
            bad.append(Bad(item["where"], f"no {group_by!r} field to group by"))
            continue
        spans = []
        for span in item["spans"]:
            target = label_map.get(str(span.get("label")), DROP)
            if target == DROP:
                audit.note(name, f"dropped label {span.get('label')}")
                continue
            spans.append({**span, "label": target})
        audit.read(name)
        record = {"id": f"{name}-{item['id']}", "source": name, "text": item["text"], "spans": spans,
                  "group": f"{group_by}={group}" if group_by else str(group), "labelled_types": labelled,
                  "source_split": "train"}
        records.append((item, record))
    assign_splits([r for _, r in records], validation_fraction, test_fraction)
    splits = {s: [] for s in SPLITS}
    parts = {"word_parts_joined": Counter(), "word_parts_apart": Counter()}
    for item, record in records:
        rejected_before = Counter(audit.record_rejections[name])
        cleaned = clean_record(record, audit)
        if cleaned is None:
            reason = next(iter((audit.record_rejections[name] - rejected_before).elements()), "rejected")
            bad.append(Bad(item["where"], reason))
            continue
        for a, _ in word_parts(cleaned["text"], cleaned["spans"]):
            parts["word_parts_joined" if a["label"] in join_words else "word_parts_apart"][a["label"]] += 1
        cleaned["spans"] = join_word_parts(cleaned["text"], cleaned["spans"], frozenset(join_words))
        splits[cleaned["split"]].append(cleaned)
    os.makedirs(out_dir, exist_ok=True)
    for split, rows in splits.items():
        with open(os.path.join(out_dir, f"{split}.jsonl"), "w", encoding="utf-8") as f:
            f.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    report = {
        "source": os.path.abspath(source), "format": fmt, "group_by": group_by, "labelled_types": labelled,
        "records": {s: len(rows) for s, rows in splits.items()},
        "groups": {s: len({r["group"] for r in rows}) for s, rows in splits.items()},
        "spans": {s: dict(Counter(sp["label"] for r in rows for sp in r["spans"])) for s, rows in splits.items()},
        "rejected": len(bad), "rejected_rows": [dataclasses.asdict(b) for b in bad],
        "unmapped_labels_dropped": {m: labels[m] for m in missing},
        **{key: dict(counts) for key, counts in parts.items()}, "audit": audit.to_dict(),
    }
    with open(os.path.join(out_dir, "import_report.json"), "w", encoding="utf-8") as f:
        json.dump(report, f, indent=1, ensure_ascii=False)
    return report
