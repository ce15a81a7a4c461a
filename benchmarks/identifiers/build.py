"""written.txt and held_out.txt (one text a line, identifiers marked {TYPE|value}) -> written.jsonl and
held_out.jsonl, gold records piiner-evaluate scores: `python benchmarks/identifiers/build.py`, then

    piiner-evaluate --model runs/quickstart --data benchmarks/identifiers/written.jsonl \\
        --types SSN,CREDIT_CARD,IBAN,EMAIL,PHONE,IP_ADDRESS,URL,DEVICE_ID --compare regex,presidio
"""

import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
MARK = re.compile(r"\{([A-Z_]+)\|([^{}]+)\}")


def record(id_, line):
    text, spans, cursor = "", [], 0
    for match in MARK.finditer(line):
        text += line[cursor:match.start()]
        spans.append({"start": len(text), "end": len(text) + len(match.group(2)), "label": match.group(1)})
        text += match.group(2)
        cursor = match.end()
    text += line[cursor:]
    return {"id": id_, "text": text, "spans": spans}


def build(name):
    with open(os.path.join(HERE, f"{name}.txt"), encoding="utf-8") as f:
        lines = [line.rstrip("\n") for line in f if line.strip() and not line.startswith("#")]
    records = [record(f"{name}-{i}", line) for i, line in enumerate(lines, 1)]
    with open(os.path.join(HERE, f"{name}.jsonl"), "w", encoding="utf-8") as f:
        f.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    counts = {}
    for r in records:
        for s in r["spans"]:
            counts[s["label"]] = counts.get(s["label"], 0) + 1
    print(f"{name}: {len(records)} texts, {sum(counts.values())} identifiers: {counts}")


def main():
    for name in ("written", "held_out"):
        build(name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
