"""microsoft/presidio-research synthetic sentences (local JSON files, MIT).

Each file is a JSON list of {full_text, masked, spans: [{entity_type, entity_value, start_position,
end_position}], template_id}. Many records share a template, and generated_small/large reuse template ids, so
the group is the template text itself (``masked`` with its placeholders blanked, case and spaces folded): the
same sentence frame lands in one split whichever file or id it came from.
"""

import os
import re

from .labels import PRESIDIO
from .loading import map_span, read_local

FILES = ("synth_dataset_v2.json", "generated_large.json", "generated_small.json")
_REPO = "https://github.com/microsoft/presidio-research/raw/HEAD"
URLS = {"synth_dataset_v2.json": f"{_REPO}/data/synth_dataset_v2.json",
        "generated_large.json": f"{_REPO}/tests/data/generated_large.json",
        "generated_small.json": f"{_REPO}/tests/data/generated_small.json"}
_PLACEHOLDER = re.compile(r"\{\{[^}]*\}\}")
_BIRTH_CONTEXT = re.compile(r"\b(?:born|birth|birthday|bday|dob|d\.o\.b)\b", re.IGNORECASE)
_CONTEXT_CHARS = 24


def birth_context(text, start):
    """True when the words just before ``start`` say the date is a birth date."""
    return bool(_BIRTH_CONTEXT.search(text[max(0, start - _CONTEXT_CHARS):start]))


def template_group(masked, fallback):
    if not isinstance(masked, str) or not masked.strip():
        return fallback
    return "presidio/" + " ".join(_PLACEHOLDER.sub("{}", masked).lower().split())


def read_rows(path, problems=None):
    """{"train": rows} from the folder of the JSON files (or one file); presidio has no split of its own."""
    if os.path.isdir(path):
        present = [f for f in FILES if os.path.exists(os.path.join(path, f))]
        if present:
            rows = []
            for name in present:
                for i, row in enumerate(read_local(os.path.join(path, name), problems)["train"]):
                    rows.append({**row, "_file": name, "_index": i})
            return {"train": rows}
    rows_by_split = read_local(path, problems)
    return {split: [{**row, "_file": os.path.basename(path), "_index": i} for i, row in enumerate(rows)]
            for split, rows in rows_by_split.items()}


def records(source, rows_by_split, audit):
    for split, rows in rows_by_split.items():
        for i, row in enumerate(rows):
            audit.read(source)
            spans = []
            text = row.get("full_text")
            for span in row.get("spans") or []:
                start = span.get("start_position")
                label = map_span(source, span.get("entity_type"), PRESIDIO, audit)
                if label == "DATE" and isinstance(text, str) and isinstance(start, int) \
                        and birth_context(text, start):
                    label = "DATE_OF_BIRTH"
                    audit.note(source, "context_labeled_DATE_OF_BIRTH")
                if label is not None:
                    spans.append({"start": start, "end": span.get("end_position"),
                                  "label": label, "value": span.get("entity_value")})
            name = row.get("_file", "file")
            index = row.get("_index", i)
            yield {"id": f"{source}-{name.rsplit('.', 1)[0]}-{index}", "source": source,
                   "text": text, "spans": spans,
                   "group": template_group(row.get("masked"), f"presidio/{name}/{row.get('template_id', index)}"),
                   "source_split": split}
