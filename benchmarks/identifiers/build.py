"""written.txt (one text a line, identifiers marked {TYPE|value}) -> written.jsonl, gold records piiner-evaluate
scores: `python benchmarks/identifiers/build.py`, then

    piiner-evaluate --model runs/quickstart --data benchmarks/identifiers/written.jsonl \\
        --types SSN,CREDIT_CARD,IBAN,EMAIL,PHONE,IP_ADDRESS,URL,DEVICE_ID --compare regex,presidio
"""

import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
MARK = re.compile(r"\{([A-Z_]+)\|([^{}]+)\}")


def record(number, line):
    text, spans, cursor = "", [], 0
    for match in MARK.finditer(line):
        text += line[cursor:match.start()]
        spans.append({"start": len(text), "end": len(text) + len(match.group(2)), "label": match.group(1)})
        text += match.group(2)
        cursor = match.end()
    text += line[cursor:]
    return {"id": f"written-{number}", "text": text, "spans": spans}


def main():
    with open(os.path.join(HERE, "written.txt"), encoding="utf-8") as f:
        lines = [line.rstrip("\n") for line in f if line.strip() and not line.startswith("#")]
    records = [record(i, line) for i, line in enumerate(lines, 1)]
    with open(os.path.join(HERE, "written.jsonl"), "w", encoding="utf-8") as f:
        f.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    counts = {}
    for r in records:
        for s in r["spans"]:
            counts[s["label"]] = counts.get(s["label"], 0) + 1
    print(f"{len(records)} texts, {sum(counts.values())} identifiers: {counts}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
