"""Tables: column decisions, cell recall and speed of `piiner-redact TABLE`, on generated tables whose headers the
column rules never saw (renamed, abbreviated) or say nothing ("col_7"). Prints a table.

    .venv/bin/python benchmarks/bench_tables.py --model runs/quickstart [--rows 200 --tables 3]
    .venv/bin/python benchmarks/bench_tables.py --detector regex          # no model: the regex detector
    .venv/bin/python benchmarks/bench_tables.py --model runs/quickstart --compare presidio   # `make baselines` first

A cell counts as hidden when its PII value no longer appears in the redacted cell. Column truth: a column of one
PII type is `type`, the notes column `text`, the others `none`.
"""

import argparse
import csv
import io
import os
import random
import sys
import tempfile
import time
from collections import Counter, defaultdict

from faker import Faker

from piiner.deid import Redactor
from piiner.hub.pii_schema import TIER_OF
from piiner.tables import redact_table
from piiner.tables.formats import Table

# (truth type, informative header variants none of which is spelled as a rule in tables/columns.py, value maker)
COLUMNS = [
    ("PERSON", ["Customer Name", "Contact Full Name", "Patient"], lambda f, r: f.name()),
    ("EMAIL", ["E-mail Address", "Contact Email", "emailAddr"], lambda f, r: f.email()),
    ("PHONE", ["Mobile No", "Tel.", "Phone Number (home)"], lambda f, r: f.numerify("(###) 555-01##")),
    ("SSN", ["SSN#", "Social Security No", "cust_ssn"], lambda f, r: f.ssn()),
    ("CREDIT_CARD", ["Card No", "Credit Card Number", "cc_num"], lambda f, r: f.credit_card_number("visa16")),
    ("DATE_OF_BIRTH", ["Date of Birth", "DOB", "birthdate"], lambda f, r: f.date_of_birth().isoformat()),
    ("IP_ADDRESS", ["Last Login IP", "ip_addr", "Client IP"], lambda f, r: f.ipv4_public()),
    ("IBAN", ["IBAN", "Bank IBAN", "payout_iban"], lambda f, r: f.iban()),
    (None, ["Order ID", "id", "row_id"], lambda f, r: str(r.randint(1000, 99999))),
    (None, ["Amount", "total_usd", "Price"], lambda f, r: f"{r.uniform(1, 999):.2f}"),
    (None, ["Status", "state_code", "Stage"], lambda f, r: r.choice(["open", "closed", "pending", "escalated"])),
    (None, ["Product", "SKU Name", "item"], lambda f, r: r.choice(["Widget Pro", "Gadget 2", "Cable 3m"])),
]
NOTES = ["Notes", "comment_text", "Agent Remarks"]


def note(fake, rng):
    """A free-text cell and the PII values inside it."""
    name, phone, email = fake.name(), fake.numerify("(###) 555-01##"), fake.email()
    kind = rng.randrange(3)
    if kind == 0:
        return f"Called {name} back at {phone}, issue resolved.", [("PERSON", name), ("PHONE", phone)]
    if kind == 1:
        return f"Customer asked to send the invoice to {email} instead.", [("EMAIL", email)]
    return "Follow-up scheduled, nothing else to add.", []


def make_table(seed, rows, informative):
    rng, fake = random.Random(seed), Faker("en_US")
    fake.seed_instance(seed)
    chosen = COLUMNS[:]
    rng.shuffle(chosen)
    headers, truth = [], []
    for i, (pii_type, names, _) in enumerate(chosen):
        headers.append(rng.choice(names) if informative else f"col_{i + 1}")
        truth.append(("type", pii_type) if pii_type else ("none", None))
    headers.append(rng.choice(NOTES) if informative else f"col_{len(chosen) + 1}")
    truth.append(("text", None))
    body, cells = [], []  # cells: (row, column index, type, value)
    for r in range(rows):
        row = []
        for c, (pii_type, _, make) in enumerate(chosen):
            value = make(fake, rng)
            row.append(value)
            if pii_type:
                cells.append((r, c, pii_type, value))
        text, inside = note(fake, rng)
        row.append(text)
        cells += [(r, len(chosen), t, v) for t, v in inside]
        body.append(row)
    return headers, truth, body, cells


def build_detector(args):
    if args.detector == "regex":
        from piiner.baselines.regex import RegexDetector

        return RegexDetector()
    from piiner.snapshot import load_pipeline

    return load_pipeline(args.model, batch_size=32)


def tables(args, informative):
    """The generated tables of one header kind: `(headers, truth, body, cells)` each."""
    for t in range(args.tables):
        yield make_table(args.seed * 1000 + t + (500 if not informative else 0), args.rows, informative)


class Hidden:
    """PII cells hidden: all of them, tier 1, and per type."""

    def __init__(self):
        self.hidden = self.total = self.tier1_hidden = self.tier1 = 0
        self.per_type = defaultdict(Counter)

    def add(self, pii_type, gone):
        self.hidden, self.total = self.hidden + gone, self.total + 1
        self.per_type[pii_type]["hidden"] += gone
        self.per_type[pii_type]["total"] += 1
        if TIER_OF.get(pii_type) == 1:
            self.tier1_hidden, self.tier1 = self.tier1_hidden + gone, self.tier1 + 1

    def shares(self):
        return f"{self.hidden / self.total:.3f} | {self.tier1_hidden / max(self.tier1, 1):.3f} ({self.tier1})"


def compare_presidio(args, kinds):
    """Presidio's analyzer on every cell as "<column>: <value>" (the text piiner's detector reads), each span it
    finds replaced: the share of PII cells whose value is gone, on the same tables."""
    from piiner.baselines.systems import PresidioBaseline
    from piiner.tables.columns import context_text

    presidio = PresidioBaseline()
    print(f"\nPresidio on each cell ({presidio.system}), the same tables:")
    print("| headers | cells hidden (all) | tier 1 cells hidden |")
    print("|---|---|---|")
    for informative in kinds:
        counted = Hidden()
        for headers, _, body, cells in tables(args, informative):
            wanted = {(r, c) for r, c, _, _ in cells}
            redacted = {}
            keys = sorted(wanted)
            contexts = [context_text(headers[c], body[r][c]) for r, c in keys]
            for (r, c), (text, prefix), spans in zip(keys, contexts, presidio.predict([t for t, _ in contexts])):
                chars = list(text)
                for s in spans:
                    chars[s["start"]:s["end"]] = ["\0"] * (s["end"] - s["start"])
                redacted[(r, c)] = "".join(chars)[prefix:]
            for r, c, pii_type, value in cells:
                counted.add(pii_type, value not in redacted[(r, c)])
        print(f"| {'informative' if informative else 'col_N'} | {counted.shares()} |")


def compare_presidio_structured(args, kinds):
    """presidio-structured on the same tables: `PandasAnalysisBuilder` picks each column's most common entity from
    its values (the header is not read; a column it maps is replaced whole), `StructuredEngine` replaces them."""
    import pandas as pd
    from presidio_anonymizer.entities import OperatorConfig
    from presidio_structured import PandasAnalysisBuilder, StructuredEngine

    from piiner.baselines.systems import PRESIDIO_TO_PIINER, PresidioBaseline

    presidio = PresidioBaseline()
    builder, engine = PandasAnalysisBuilder(analyzer=presidio.analyzer), StructuredEngine()
    replace = {"DEFAULT": OperatorConfig("replace", {"new_value": "<PII>"})}
    print(f"\npresidio-structured ({presidio.system}), the same tables:")
    print("| headers | PII-type columns right | columns without PII left alone | PII cells hidden | tier 1 cells "
          "hidden | rows/s |")
    print("|---|---|---|---|---|---|")
    for informative in kinds:
        typed_right = typed = alone = plain = 0
        counted, seconds = Hidden(), 0.0
        for headers, truth, body, cells in tables(args, informative):
            frame = pd.DataFrame(body, columns=headers, dtype=str)
            start = time.perf_counter()
            analysis = builder.generate_analysis(frame, n=min(len(frame), 500))
            out = engine.anonymize(frame, analysis, operators=replace)
            seconds += time.perf_counter() - start
            mapping = {c: PRESIDIO_TO_PIINER.get(e, e) for c, e in analysis.entity_mapping.items()}
            for header, (kind, pii_type) in zip(headers, truth):
                if kind == "type":
                    typed += 1
                    typed_right += mapping.get(header) == pii_type
                elif kind == "none":
                    plain += 1
                    alone += header not in mapping
            for r, c, pii_type, value in cells:
                counted.add(pii_type, value not in str(out.iloc[r, c]))
        print(f"| {'informative' if informative else 'col_N'} | {typed_right / typed:.3f} ({typed_right}/{typed}) | "
              f"{alone / plain:.3f} ({alone}/{plain}) | {counted.shares()} | {args.rows * args.tables / seconds:.1f} |")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", help="saved piiner model folder")
    p.add_argument("--detector", choices=("model", "regex"), default="model")
    p.add_argument("--rows", type=int, default=200)
    p.add_argument("--tables", type=int, default=3, help="tables per header kind")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--headers", choices=("both", "informative", "col_N"), default="both")
    p.add_argument("--show-wrong", action="store_true", help="list each column decided wrongly")
    p.add_argument("--compare", choices=("presidio", "presidio-structured"),
                   help="presidio: Presidio's analyzer on each cell, read as piiner reads it; presidio-structured: "
                        "Presidio's own table analysis (pip install presidio-structured)")
    args = p.parse_args(argv)
    if args.detector == "model" and not args.model:
        p.error("--model DIR (or --detector regex)")
    detector = build_detector(args)
    print(f"{args.tables} tables x {args.rows} rows per header kind, {len(COLUMNS) + 1} columns, detector "
          f"{args.detector}{'' if args.detector == 'regex' else ' ' + args.model}")
    print("| headers | column decisions right | of which PII types right | cells hidden (all) | tier 1 cells hidden "
          "| rows/s |")
    print("|---|---|---|---|---|---|")
    per_type, wrong = defaultdict(Counter), []
    kinds = {"both": (True, False), "informative": (True,), "col_N": (False,)}[args.headers]
    for informative in kinds:
        right = typed_right = typed = rows_done = 0
        counted, seconds = Hidden(), 0.0
        for headers, truth, body, cells in tables(args, informative):
            with tempfile.TemporaryDirectory() as folder:
                path = os.path.join(folder, "table.csv")
                with open(path, "w", newline="") as f:
                    csv.writer(f).writerows([headers] + body)
                out = io.BytesIO()
                start = time.perf_counter()
                report, _ = redact_table(Table(path), Redactor(detector, batch_size=32), out)
                seconds += time.perf_counter() - start
            rows_done += args.rows
            decided = report.by_column()
            for header, (kind, pii_type) in zip(headers, truth):
                d = decided[header]
                ok = (d.decision, d.type if d.decision == "type" else None) == (kind, pii_type)
                right += ok
                if not ok:
                    wrong.append(f"{header}: truth {kind} {pii_type or ''}, decided {d.decision} {d.type or ''} "
                                 f"({d.reason}; found {d.found}; {d.examples})")
                if kind == "type":
                    typed += 1
                    typed_right += d.decision == "type" and d.type == pii_type
            redacted = list(csv.reader(io.StringIO(out.getvalue().decode())))[1:]
            for r, c, pii_type, value in cells:
                counted.add(pii_type, value not in redacted[r][c])
        for pii_type, counts in counted.per_type.items():
            per_type[pii_type].update(counts)
        columns = args.tables * len(headers)
        print(f"| {'informative' if informative else 'col_N'} | {right / columns:.3f} ({right}/{columns}) | "
              f"{typed_right / typed:.3f} ({typed_right}/{typed}) | {counted.shares()} | {rows_done / seconds:.1f} |")
    if args.compare == "presidio":
        compare_presidio(args, kinds)
    elif args.compare == "presidio-structured":
        compare_presidio_structured(args, kinds)
    if args.show_wrong:
        print("\n".join(["", "wrong decisions:"] + wrong))
    print()
    print("| type | cells hidden | cells |")
    print("|---|---|---|")
    for pii_type, counts in sorted(per_type.items()):
        print(f"| {pii_type} | {counts['hidden'] / counts['total']:.3f} | {counts['total']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
