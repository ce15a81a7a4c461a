"""What each column of a table holds, decided from a sample of its rows.

Each sampled cell is read as "<column name>: <value>" by the detector (the model with its recognizers, or the
regex detector), so the header is context the way a label before a value is in prose. A column then gets one of:

- ``type``: every cell is one value of one PII type (an SSN column). Every cell of it is redacted whole, so a value
  the detector would miss in one row is not left in clear. Chosen when the header names the type and at least
  `HINTED_AGREEMENT` of the sampled cells are read as that type whole, or, whatever the header, when at least
  `UNHINTED_AGREEMENT` are read as one type whole.
- ``text``: free text with PII inside (a notes column): each cell is scanned on its own. Chosen for long cells and
  for any column where the detector found something but no single type agrees enough.
- ``none``: nothing found in the sample and short cells: left as it is.

The decisions are a `ColumnReport`, written as JSON with `--column-report` and read back with `--use-report` for
later files of the same schema.
"""

import dataclasses
import json
import re
import statistics
from collections import Counter

from piiner.hub.pii_schema import PII_TYPES
from piiner.hub.recognizers_piiner import BUILTIN_RECOGNIZERS, VALIDATORS

from .formats import leaves

HINTED_AGREEMENT = 0.3
UNHINTED_AGREEMENT = 0.6
LONG_TEXT_WORDS = 4  # a column whose median cell has this many words is free text
DECISIONS = ("type", "text", "none")

# Header words that name a type. A header is split into lower-case words ("CustomerSSN", "customer_ssn" ->
# customer, ssn); the first rule whose words all appear wins, so longer phrases come first.
HEADER_RULES = (
    (("date", "birth"), "DATE_OF_BIRTH"), (("dob",), "DATE_OF_BIRTH"), (("birthday",), "DATE_OF_BIRTH"),
    (("birthdate",), "DATE_OF_BIRTH"),
    (("social", "security"), "SSN"), (("ssn",), "SSN"),
    (("credit", "card"), "CREDIT_CARD"), (("card", "number"), "CREDIT_CARD"), (("cc",), "CREDIT_CARD"),
    (("iban",), "IBAN"), (("swift",), "SWIFT_CODE"), (("bic",), "SWIFT_CODE"),
    (("routing",), "BANK_ACCOUNT"), (("bank", "account"), "BANK_ACCOUNT"),
    (("account",), "ACCOUNT_NUMBER"), (("acct",), "ACCOUNT_NUMBER"),
    (("passport",), "PASSPORT_NUMBER"), (("driver", "license"), "DRIVERS_LICENSE"),
    (("drivers", "license"), "DRIVERS_LICENSE"), (("licence",), "DRIVERS_LICENSE"), (("dl",), "DRIVERS_LICENSE"),
    (("tax",), "TAX_ID"), (("ein",), "TAX_ID"), (("tin",), "TAX_ID"),
    (("email",), "EMAIL"), (("mail",), "EMAIL"),
    (("phone",), "PHONE"), (("tel",), "PHONE"), (("telephone",), "PHONE"), (("mobile",), "PHONE"),
    (("cell",), "PHONE"), (("fax",), "PHONE"),
    (("ip",), "IP_ADDRESS"), (("mac",), "DEVICE_ID"), (("device",), "DEVICE_ID"),
    (("url",), "URL"), (("website",), "URL"), (("homepage",), "URL"),
    (("username",), "USERNAME"), (("user", "name"), "USERNAME"), (("login",), "USERNAME"),
    (("handle",), "USERNAME"),
    (("street",), "STREET_ADDRESS"), (("address",), "STREET_ADDRESS"), (("addr",), "STREET_ADDRESS"),
    (("city",), "LOCATION"), (("country",), "LOCATION"), (("state",), "LOCATION"), (("zip",), "LOCATION"),
    (("postcode",), "LOCATION"),
    (("company",), "ORGANIZATION"), (("employer",), "ORGANIZATION"), (("organization",), "ORGANIZATION"),
    (("organisation",), "ORGANIZATION"),
    (("mrn",), "MEDICAL_RECORD"), (("medical", "record"), "MEDICAL_RECORD"),
    (("employee", "id"), "EMPLOYEE_ID"), (("student", "id"), "STUDENT_ID"),
    (("plate",), "LICENSE_PLATE"), (("vin",), "VEHICLE_ID"), (("wallet",), "CRYPTO_WALLET"),
    (("salary",), "SALARY"), (("age",), "AGE"), (("gender",), "GENDER"), (("sex",), "GENDER"),
    (("nationality",), "NATIONALITY"), (("religion",), "RELIGION"), (("password",), "PASSWORD"),
    (("pin",), "PIN"), (("diagnosis",), "HEALTH_CONDITION"), (("condition",), "HEALTH_CONDITION"),
    (("date",), "DATE"),
    (("first", "name"), "PERSON"), (("last", "name"), "PERSON"), (("full", "name"), "PERSON"),
    (("surname",), "PERSON"), (("firstname",), "PERSON"), (("lastname",), "PERSON"), (("fullname",), "PERSON"),
    (("patient",), "PERSON"), (("customer", "name"), "PERSON"), (("contact", "name"), "PERSON"),
    (("name",), "PERSON"),
)
# A header that is only one of these names a record's own key or a count, not a person's identifier: its column is
# typed only by values that a recognizer validates (an "id" column of SSNs), never by the model's reading of bare
# numbers ("id: 1042" read as a tax id).
RECORD_KEY_HEADERS = {("id",), ("row",), ("row", "id"), ("record", "id"), ("index",), ("key",), ("uuid",), ("guid",),
                      ("no",), ("number",), ("count",), ("qty",), ("quantity",), ("amount",), ("total",),
                      ("price",), ("status",)}
VALIDATED_TYPES = {r.type for r in BUILTIN_RECOGNIZERS}
# A cell read as one of these types counts for it only if the type's validator accepts the value: a model reads
# bare numbers as phone numbers, which "31234" cannot be. (DEVICE_ID's validator knows MAC addresses only.)
CELL_VALIDATORS = {r.type: VALIDATORS[r.validator] for r in BUILTIN_RECOGNIZERS if r.type != "DEVICE_ID"}
# Types that name the same kind of value: a column split between them is one column of the type most cells got.
TYPE_FAMILIES = ({"DATE", "DATE_OF_BIRTH"},)
NUMBER = re.compile(r"[+-]?\d+(?:[.,]\d+)?")
# A header with one of these words names something that is not a person even with "name" in it.
NOT_A_PERSON = {"file", "product", "item", "host", "domain", "field", "column", "table", "brand", "model",
                "project", "team", "category", "display", "package", "service", "app", "event"}


def header_words(header):
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", str(header))
    return [w for w in re.split(r"[^A-Za-z0-9]+", spaced.lower()) if w]


def header_type(header):
    """The PII type a column's name says it holds, or None."""
    words = header_words(header)
    for needed, pii_type in HEADER_RULES:
        if all(w in words for w in needed):
            if pii_type == "PERSON" and NOT_A_PERSON & set(words):
                return None
            return pii_type
    return None


def context_text(column, value):
    """A cell as the detector reads it, `(text, where the value starts)`: its column's name as the label before the
    value ("customer_ssn" -> "customer ssn: 219-09-9999")."""
    label = " ".join(header_words(column)) or str(column)
    return f"{label}: {value}", len(label) + 2


def mask_example(value, keep=1):
    """A sampled value for the report with its letters and digits hidden but the first `keep`."""
    out, seen = [], 0
    for char in str(value)[:40]:
        if char.isalnum():
            seen += 1
            out.append(char if seen <= keep else "*")
        else:
            out.append(char)
    return "".join(out)


@dataclasses.dataclass
class ColumnDecision:
    column: str
    decision: str  # "type", "text" or "none"
    type: str | None = None
    agreement: float = 0.0  # share of sampled non-empty cells read as `type` whole
    cells_sampled: int = 0
    header_type: str | None = None
    found: dict = dataclasses.field(default_factory=dict)  # {type: cells read as it whole}
    examples: list = dataclasses.field(default_factory=list)
    reason: str = ""


@dataclasses.dataclass
class ColumnReport:
    columns: list
    rows_sampled: int = 0
    source: str = ""

    def by_column(self):
        return {d.column: d for d in self.columns}

    def to_json(self):
        return {"source": self.source, "rows_sampled": self.rows_sampled,
                "columns": [dataclasses.asdict(d) for d in self.columns]}

    def dumps(self):
        """The report as `--column-report` writes it and `load` reads it back."""
        return json.dumps(self.to_json(), indent=1, ensure_ascii=False) + "\n"

    @classmethod
    def from_json(cls, data):
        columns = [ColumnDecision(**item) for item in data["columns"]]
        for d in columns:
            check_decision(d.column, d.decision, d.type)
        return cls(columns, data.get("rows_sampled", 0), data.get("source", ""))

    @classmethod
    def load(cls, path):
        try:
            with open(path, encoding="utf-8") as f:
                return cls.from_json(json.load(f))
        except (OSError, KeyError, TypeError) as error:
            raise ValueError(f"{path}: not a column report written by --column-report ({error})") from None
        except ValueError as error:
            raise ValueError(f"{path}: {error}") from None

    def describe(self):
        width = max((len(d.column) for d in self.columns), default=6)
        lines = [f"{'column':<{width}}  decision  type                agree  cells  reason"]
        for d in self.columns:
            lines.append(f"{d.column:<{width}}  {d.decision:<8}  {d.type or '-':<18}  {d.agreement:5.2f}  "
                         f"{d.cells_sampled:5d}  {d.reason}")
        return "\n".join(lines)


def check_decision(column, decision, pii_type, known_types=PII_TYPES):
    if decision not in DECISIONS:
        raise ValueError(f"column {column!r}: decision must be one of {DECISIONS}, got {decision!r}")
    if decision == "type" and pii_type not in known_types:
        raise ValueError(f"column {column!r}: {pii_type!r} is not a PII type")


def _whole_type(entities, start, end):
    """The type of an entity covering the cell's value [start, end) whole, else None."""
    for e in entities:
        if e["start"] <= start and e["end"] >= end:
            return e["type"]
    return None


def decide(column, cells, entities_per_cell):
    """The decision for one column from its sampled non-empty cells and what the detector found in each (offsets
    into the cell as `context_text` wrote it)."""
    hint = header_type(column)
    record_key = tuple(header_words(column)) in RECORD_KEY_HEADERS
    prefix = context_text(column, "")[1]
    whole, partial = Counter(), 0
    for cell, entities in zip(cells, entities_per_cell):
        stripped = cell.strip()
        start = prefix + cell.index(stripped[:1]) if stripped else prefix
        found = _whole_type(entities, start, start + len(stripped))
        if found and (found not in CELL_VALIDATORS or CELL_VALIDATORS[found](stripped)):
            whole[found] += 1
        elif entities:
            partial += 1
    for family in TYPE_FAMILIES:
        members = [t for t in whole if t in family]
        if len(members) > 1:
            top = hint if hint in members else max(members, key=lambda t: whole[t])
            whole = Counter({t: c for t, c in whole.items() if t not in family} | {top: sum(whole[t] for t in members)})
    n = len(cells)
    decision = ColumnDecision(column, "none", cells_sampled=n, header_type=hint, found=dict(whole.most_common()),
                              examples=[mask_example(c) for c in cells[:3]])
    if n == 0:
        decision.reason = "no values in the sample"
        return decision
    long_text = statistics.median(len(c.split()) for c in cells) >= LONG_TEXT_WORDS
    if not hint and all(NUMBER.fullmatch(c.strip()) for c in cells):
        # Plain numbers under a header that names nothing (ids, amounts, counts): only a validated identifier types
        # them; what else a model reads in a bare number is a guess that would damage the data.
        whole = Counter({t: c for t, c in whole.items() if t in CELL_VALIDATORS})
        partial = 0
    best, best_count = whole.most_common(1)[0] if whole else (None, 0)
    if not long_text and hint and whole[hint] / n >= HINTED_AGREEMENT:
        decision.decision, decision.type, decision.agreement = "type", hint, whole[hint] / n
        decision.reason = "the header names the type and the values agree"
    elif (not long_text and best and best_count / n >= UNHINTED_AGREEMENT
          and (best in VALIDATED_TYPES or not record_key)):
        decision.decision, decision.type, decision.agreement = "type", best, best_count / n
        decision.reason = "the values agree on one type"
    elif long_text or ((whole or partial) and not record_key):
        decision.decision = "text"
        decision.agreement = best_count / n if best else 0.0
        decision.type = best
        decision.reason = "long text: scanned cell by cell" if long_text else "mixed findings: scanned cell by cell"
    else:
        decision.reason = ("a record key: only validated identifiers would type it" if record_key
                           else "nothing found in the sample")
    return decision


def analyse_columns(rows, detector_detect, columns=None, source=""):
    """A `ColumnReport` for `rows` (dicts; nested JSON as dotted columns): `detector_detect(texts)` returns the
    entities per text (a `Redactor.detect`'s results' `.entities`). `columns` orders the report; a column only some
    rows hold is included."""
    cells = {}
    for row in rows:
        for column, value in leaves(row):
            cells.setdefault(column, [])
            if value is not None and str(value).strip():
                cells[column].append(str(value))
    order = [c for c in dict.fromkeys([*(columns or []), *cells]) if c in cells]
    texts = [context_text(column, value)[0] for column in order for value in cells[column]]
    found = iter(detector_detect(texts) if texts else [])  # one call for every sampled cell, in column order
    decisions = [decide(column, cells[column], [next(found) for _ in cells[column]]) for column in order]
    return ColumnReport(decisions, rows_sampled=len(rows), source=source)
