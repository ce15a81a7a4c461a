"""Recognizers: identifiers found by a pattern and a validator, and the caller's own patterns and lists, as evidence
the CRF decode obeys.

A recognizer is Presidio's `PatternRecognizer` in small: a type, a pattern, a base score, an optional validator
(Luhn, the SSN issuing rules, IBAN mod-97, an address Python parses) that vetoes a match, and context words that
raise the score when one stands just before the match. Its matches are not added after decoding, where the model's
wrong type would still win: `decoding_piiner` fixes the labels of a match's tokens before the Viterbi pass, so a
valid SSN with no word naming it is reported as an SSN, whole, wherever it stands and whatever the model scored.

Ships with the weights: standard library and its sibling `checksums` only.
"""

import dataclasses
import functools
import ipaddress
import math
import re

from .checksums import fold_width, iban_valid, luhn_valid


# ---------------------------------------------------------------------------------------------------------------
# Validators: one string in, valid or not. The only place in the project where an identifier's validity is written.


def _digits(value):
    return re.sub(r"\D", "", value)


def ssn_valid(value):
    """Nine digits that the US issuing rules allow: area not 000, 666 or 9xx, group not 00, serial not 0000."""
    digits = _digits(value)
    if len(digits) != 9:
        return False
    area, group, serial = digits[:3], digits[3:5], digits[5:]
    return area not in ("000", "666") and area[0] != "9" and group != "00" and serial != "0000"


def card_valid(value):
    """12 to 19 digits that pass Luhn."""
    return 12 <= len(_digits(value)) <= 19 and luhn_valid(value)


def card_issuer_valid(value):
    """A card number of a major network (length and leading digits), passing Luhn: what a bare number must be to be
    taken for a card without the model's word."""
    d = _digits(value)
    n = len(d)
    if n < 13:
        return False
    ok = ((d[0] == "4" and n in (13, 16, 19))
          or ((51 <= int(d[:2]) <= 55 or 2221 <= int(d[:4]) <= 2720) and n == 16)
          or (d[:2] in ("34", "37") and n == 15)
          or ((d.startswith("6011") or d.startswith("65") or 644 <= int(d[:3]) <= 649) and 16 <= n <= 19)
          or ((d[:2] in ("36", "38") or 300 <= int(d[:3]) <= 305) and n == 14)
          or (3528 <= int(d[:4]) <= 3589 and 16 <= n <= 19))
    return ok and luhn_valid(d)


def imei_valid(value):
    """15 digits that pass Luhn: a handset's IMEI."""
    return len(_digits(value)) == 15 and luhn_valid(value)


def ip_valid(value):
    """An IPv4 or IPv6 address Python's `ipaddress` parses."""
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True


_EMAIL = re.compile(r"[A-Za-z0-9._%+'-]{1,64}@(?:[A-Za-z0-9-]{1,63}\.){1,8}[A-Za-z]{2,24}")


def email_valid(value):
    """A local part, one "@" and a domain with a top-level label of letters."""
    return bool(_EMAIL.fullmatch(value))


_MAC = re.compile(r"[0-9A-Fa-f]{2}([:-])(?:[0-9A-Fa-f]{2}\1){4}[0-9A-Fa-f]{2}|(?:[0-9A-Fa-f]{4}\.){2}[0-9A-Fa-f]{4}")


def mac_valid(value):
    """Six hex octets joined by ":" or "-", or three dot-joined groups of four."""
    return bool(_MAC.fullmatch(value))


_SSN_LAYOUT = re.compile(r"\d{3}([-. ])\d{2}\1\d{4}")
_DATE_LAYOUT = re.compile(r"\d{1,4}([-./])\d{1,2}\1\d{1,4}")


_KEYPAD = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "22233344455566677778889999")


# Where a phone number starts: its first digit, "+" or "(" (what stands before it is not the number's).
PHONE_START = re.compile(r"[\d+(]")


def phone_valid(value):
    """A layout some phone number has: 7 to 15 digits (letters after the first digits dialled as on a keypad, as in
    1-800-FLOWERS), an extension marker, and not the layout of an SSN or a date; no other character (a time's
    colon). A North American number (10 digits, or 11 after a 1) has an area code and exchange from 2-9 and, written
    with separators, groups of 3-3-4. A number spaced out one digit at a time is read closed up. It starts with a
    digit, "+" or "(": the dashes of "KRISSY---301 944-5032" separate it from the name."""
    if not PHONE_START.match(value.lstrip()):
        return False
    closed = _close_spaced_runs(value.strip())
    core = re.split(r"(?i),?\s*(?:ext\.?|extn\.?|extension|x)\s*\d+$", closed[0] if closed else value.strip())[0]
    if re.search(r"[A-Za-z]", core):
        if not re.fullmatch(r"[\d\s().+-]*\d[\s().-]*[A-Za-z][A-Za-z\d\s().-]*", core):
            return False
        core = core.upper().translate(_KEYPAD)
    digits = _digits(core)
    if not 7 <= len(digits) <= 15 or _SSN_LAYOUT.fullmatch(core) or _DATE_LAYOUT.fullmatch(core):
        return False
    if re.search(r"[^\d\s().+/-]", core):  # a time's colon, a letter left over
        return False
    international = core.lstrip().startswith("+") and not core.lstrip().startswith("+1")
    if not international and (len(digits) == 10 or (len(digits) == 11 and digits[0] == "1")):
        national = digits[-10:]
        groups = [len(g) for g in re.findall(r"\d+", core)]
        if len(groups) > 1 and len(digits) == 11 and groups[0] == 1:
            groups = groups[1:]
        # Written with separators, a North American number is grouped 3-3-4 ("2023-118842" is a claim number).
        return (national[0] in "23456789" and national[3] in "23456789"
                and groups in ([len(digits)], [3, 3, 4], [3, 7]))
    return True


# Numbers joined by "/", "." or "-": a date written in numbers, or a range of them ("7/16-7/18").
_NUMBER_GROUP = re.compile(r"\d+(?:[./-]\d+)+")


def _calendar_date(group):
    """Whether `group`, numbers joined by one separator, is a date some layout writes: month and day either way
    round, a month and its year ("6/85", not with "."), a year range ("1990-91"), a year first ("2024-02-11"), a year
    last ("10-15-19")."""
    separators = set(re.findall(r"[./-]", group))
    parts = re.split(r"[./-]", group)
    if len(separators) != 1 or len(parts) > 3 or any(len(p) > 4 for p in parts):
        return False
    n = [int(p) for p in parts]

    def day_month(a, b):
        return (1 <= a <= 12 and 1 <= b <= 31) or (1 <= a <= 31 and 1 <= b <= 12)

    year_length = (2, 4)
    if len(parts) == 2:
        month_year = "." not in separators and 1 <= n[0] <= 12 and len(parts[1]) in year_length
        year_first = len(parts[0]) == 4 and (1 <= n[1] <= 12 or (len(parts[1]) in year_length and "." not in separators))
        return day_month(*n) or month_year or year_first
    if len(parts[0]) == 4:
        return 1 <= n[1] <= 12 and 1 <= n[2] <= 31
    return len(parts[2]) in year_length and day_month(n[0], n[1])


def date_numbers_valid(value):
    """Every stretch of numbers joined by "/", "." or "-" in `value` is a date a calendar has, or a range of them
    joined by "-" (each end a date or a day: "7/16-7/18", "8/9-10"); words, times and lone numbers are not read.
    "40/500/10" and "98.6" are no dates, nor a phone number's "555-201-3344"."""
    for group in _NUMBER_GROUP.findall(value):
        if _calendar_date(group):
            continue
        ends = group.split("-")
        if len(ends) != 2 or not all(_calendar_date(end) or (end.isdigit() and 1 <= int(end) <= 31) for end in ends):
            return False
    return True


def url_valid(value):
    """A scheme and a host with a dot (or localhost), or a host starting www."""
    match = re.match(r"(?i)(?:[a-z][a-z0-9+.-]*://)?([^/?#:\s@]+)", value)
    host = match.group(1) if match else ""
    return host == "localhost" or ("." in host and not host.startswith(".") and not host.endswith("."))


VALIDATORS = {
    "ssn": ssn_valid,
    "luhn": card_valid,
    "imei": imei_valid,
    "card": card_issuer_valid,
    "iban": iban_valid,
    "ip": ip_valid,
    "email": email_valid,
    "mac": mac_valid,
    "phone": phone_valid,
    "url": url_valid,
    "date_numbers": date_numbers_valid,
}


# ---------------------------------------------------------------------------------------------------------------
# Recognizers


# Presidio's default pattern flags: a user's pattern reads as it would there.
PATTERN_FLAGS = re.IGNORECASE | re.MULTILINE | re.DOTALL
# How much a context word raises a score, and how far before a match it is looked for (Presidio's context
# enhancer adds 0.35 for a context word among the five words before a match).
CONTEXT_BONUS = 0.35
CONTEXT_WORDS_BEFORE = 5
# A URL's sentence punctuation is not part of it ("see http://x.co/a." ends at "a").
_TRAILING_PUNCTUATION = ".,;:!?)]}'\""


class RecognizerError(ValueError):
    """A recognizer, allow list or deny list that cannot be used; the message names it."""


@dataclasses.dataclass(frozen=True)
class Recognizer:
    """One pattern recognizer.

    Args:
        type (`str`): the entity type it reports; a type outside the model's labels is reported with `tier`.
        pattern (`re.Pattern`): what it matches; a group named `value` is the entity, the rest context.
        score (`float`): the score of a match without context.
        validator (`str`, *optional*): a name in `VALIDATORS`; a match it rejects is no match.
        context (`tuple[str]`): words that raise the score by `CONTEXT_BONUS` when one stands among the
            `CONTEXT_WORDS_BEFORE` words before the match.
        context_required (`bool`): only a match with a context word counts (nine bare digits are an SSN only
            after "SSN").
        not_after (`tuple[str]`): words that, among the words before the match, say it is something else (an order
            or account number shaped like a phone number).
        tier (`int`, *optional*): the tier of a type outside the schema.
        source (`str`): "builtin", "user" or "deny_list", reported with each match.
    """

    type: str
    pattern: re.Pattern
    score: float = 0.9
    validator: str | None = None
    context: tuple = ()
    context_required: bool = False
    not_after: tuple = ()
    tier: int | None = None
    source: str = "user"

    def matches(self, text):
        check = VALIDATORS[self.validator] if self.validator else None
        for m in self.pattern.finditer(text):
            start, end = m.span("value") if "value" in self.pattern.groupindex else m.span()
            if self.type == "URL":
                end = start + len(text[start:end].rstrip(_TRAILING_PUNCTUATION))
            if start < end and check and not check(text[start:end]):
                end = self._valid_prefix_end(text, start, end, check)
            if start >= end:
                continue
            before = _words_before(text, start)
            named, other = _last_named(before, self.context), _last_named(before, self.not_after)
            # The nearer word decides ("order 88213, call 1-888-555-0110" is a phone number), where a word stands
            # between them; next to each other they name one thing ("account number").
            if other and not (named and named[0] > other[1]):
                continue
            in_context = bool(named)
            if self.context_required and not in_context:
                continue
            score = min(1.0, self.score + CONTEXT_BONUS) if in_context and not self.context_required else self.score
            yield Match(start, end, self.type, score, self.source, self.tier)


    def _valid_prefix_end(self, text, start, end, check):
        """Where a match the validator refuses may end instead: the longest part of it, cut at a space, that the
        pattern still matches whole and the validator accepts (a card number whose greedy match ran on into the
        expiry date after it, "4000 0566 5566 5556 04/26"); `start` when there is none."""
        for cut in range(end - 1, start, -1):
            if text[cut].isspace() and not text[cut - 1].isspace():
                candidate = text[start:cut]
                if self.pattern.fullmatch(candidate) and check(candidate):
                    return cut
        return start


@dataclasses.dataclass(frozen=True)
class Match:
    start: int
    end: int
    type: str
    score: float
    source: str
    tier: int | None = None


def _words_before(text, start):
    line_start = text.rfind("\n", 0, start) + 1
    words = re.findall(r"[^\W_]+", text[max(line_start, start - 80):start].lower())
    return " ".join(words[-CONTEXT_WORDS_BEFORE:])


def _last_named(words, phrases):
    """The word positions `(first, after last)` of the last of `phrases` among `words` (a string of words), or
    `None`."""
    words = words.split()
    found = None
    for phrase in phrases:
        n = len(phrase.split())
        for i in range(len(words) - n, -1, -1):
            if " ".join(words[i:i + n]) == phrase:
                if found is None or i + n > found[1] or (i + n == found[1] and i < found[0]):
                    found = (i, i + n)
                break
    return found


def _builtin(type_, pattern, score, validator, context=(), **kwargs):
    return Recognizer(type_, re.compile(pattern), score, validator, tuple(context), source="builtin", **kwargs)


_HEX4 = "[0-9A-Fa-f]{1,4}"
_V4 = r"(?:\d{1,3}\.){3}\d{1,3}"  # the last 32 bits of an IPv6 address written as IPv4 ("::ffff:192.0.2.128")
_SSN_CONTEXT = ("ssn", "ssns", "social security", "social security number", "social", "ss", "ss no", "sin")
_PHONE_CONTEXT = ("phone", "call", "called", "tel", "telephone", "mobile", "cell", "fax", "contact", "reach",
                  "number", "text", "dial", "ph")
# An extension is part of the number it follows ("212-555-0147 ext. 22", "x304"), as the decode's phone rule has it.
_EXTENSION = r"(?:,? ?(?i:ext\.?|extn\.?|extension|x) ?\d{1,5})?"
_NOT_A_PHONE = ("account", "acct", "order", "invoice", "policy", "member", "routing", "serial", "card", "ref",
                "reference", "case", "claim", "tracking", "ssn", "social security")

# Built in, in order of preference where two overlap at equal length (the longer match wins first).
BUILTIN_RECOGNIZERS = (
    _builtin("EMAIL", r"(?<![\w.%+'-])[A-Za-z0-9._%+'-]{1,64}@(?:[A-Za-z0-9-]{1,63}\.){1,8}[A-Za-z]{2,24}(?![\w-])",
             1.0, "email"),
    _builtin("URL", r"(?i)\b(?:(?:https?|ftp)://|www\.)[^\s<>\"'`]+", 0.9, "url"),
    _builtin("CREDIT_CARD", r"(?<![\d.-])\d(?:[ .-]?\d){12,18}(?![\d-]|\.\d)", 1.0, "card",
             ("card", "credit", "visa", "mastercard", "amex", "debit")),
    _builtin("IBAN", r"(?i)\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?\b", 1.0, "iban"),
    _builtin("IP_ADDRESS", r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?![\w]|\.\d)", 0.95, "ip"),
    _builtin("IP_ADDRESS", rf"(?<![\w:])(?:(?:{_HEX4}:){{6}}{_V4}|(?:{_HEX4}:){{1,5}}:(?:{_HEX4}:){{0,4}}{_V4}"
             rf"|::(?:{_HEX4}:){{0,5}}{_V4}|(?:{_HEX4}:){{7}}{_HEX4}|(?:{_HEX4}:){{1,7}}:(?:{_HEX4}(?::{_HEX4}){{0,6}})?"
             rf"|::(?:{_HEX4}(?::{_HEX4}){{0,6}}))(?![\w:]|\.\d)", 0.95, "ip"),
    _builtin("DEVICE_ID", r"(?<![\w:.-])(?:[0-9A-Fa-f]{2}([:-])(?:[0-9A-Fa-f]{2}\1){4}[0-9A-Fa-f]{2}"
             r"|(?:[0-9A-Fa-f]{4}\.){2}[0-9A-Fa-f]{4})(?![\w:-]|\.\w)", 0.9, "mac", ("mac", "device", "hardware")),
    _builtin("DEVICE_ID", r"(?<![\d.-])\d{2}([ -]?)\d{6}\1\d{6}\1\d(?![\d-]|\.\d)", 0.9, "imei",
             ("imei", "imeis", "handset", "device"), context_required=True),
    _builtin("SSN", r"(?<![\d.-])\d{3}([- .])\d{2}\1\d{4}(?![\d-]|\.\d)", 0.85, "ssn", _SSN_CONTEXT),
    _builtin("SSN", r"(?<![\d.-])\d{9}(?![\d-]|\.\d)", 0.85, "ssn", _SSN_CONTEXT, context_required=True),
    _builtin("PHONE", r"(?<![\w+.-])(?:\+?1[ .-]?)?(?:\(\d{3}\)[ .-]?|\d{3}[ .-])\d{3}[ .-]\d{4}" + _EXTENSION
             + r"(?![\w-]|\.\d)", 0.75, "phone", _PHONE_CONTEXT, not_after=_NOT_A_PHONE),
    _builtin("PHONE", r"(?<![\w+])\+[2-9]\d{0,2}(?:[ .-]?\(?\d{1,5}\)?){2,5}" + _EXTENSION + r"(?![\w-]|\.\d)", 0.75,
             "phone", _PHONE_CONTEXT, not_after=_NOT_A_PHONE),
)


def _check_score(value, what):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value) or not 0 <= value <= 1:
        raise RecognizerError(f"{what}: score must be a number in [0, 1], got {value!r}")
    return float(value)


def user_recognizer(spec, known_types=()):
    """A `Recognizer` from a dict such as `{"type": "EMPLOYEE_ID", "pattern": r"EMP-\\d{6}", "context":
    ["employee"], "score": 0.9}` (keys: type, pattern, score, validator, context, context_required, not_after,
    tier); a `RecognizerError` naming what is wrong, before any text is read."""
    if isinstance(spec, Recognizer):
        return spec
    if not isinstance(spec, dict):
        raise RecognizerError(f"a recognizer must be a dict with 'type' and 'pattern', got {type(spec).__name__}")
    unknown = sorted(set(spec) - {"type", "pattern", "score", "validator", "context", "context_required", "not_after",
                                  "tier"})
    if unknown:
        raise RecognizerError(f"recognizer {spec.get('type')!r}: unknown keys {unknown}")
    type_, pattern = spec.get("type"), spec.get("pattern")
    if not isinstance(type_, str) or not re.fullmatch(r"[A-Z][A-Z0-9_]*", type_ or ""):
        raise RecognizerError(f"recognizer type must be an upper-case name such as EMPLOYEE_ID, got {type_!r}")
    if not isinstance(pattern, str) or not pattern:
        raise RecognizerError(f"recognizer {type_}: 'pattern' must be a non-empty regular expression string")
    try:
        compiled = re.compile(pattern, PATTERN_FLAGS)
    except re.error as error:
        raise RecognizerError(f"recognizer {type_}: bad pattern {pattern!r}: {error}") from None
    if compiled.fullmatch(""):
        raise RecognizerError(f"recognizer {type_}: pattern {pattern!r} matches the empty string")
    validator = spec.get("validator")
    if validator is not None and validator not in VALIDATORS:
        raise RecognizerError(f"recognizer {type_}: unknown validator {validator!r}; known: {sorted(VALIDATORS)}")
    words = {}
    for key in ("context", "not_after"):
        given = spec.get(key) or ()
        if isinstance(given, str) or not all(isinstance(w, str) and w.strip() for w in given):
            raise RecognizerError(f"recognizer {type_}: {key!r} must be a list of words, got {given!r}")
        words[key] = tuple(" ".join(re.findall(r"[^\W_]+", w.lower())) for w in given)
    tier = spec.get("tier")
    if tier is not None and (isinstance(tier, bool) or tier not in (1, 2, 3, 4)):
        raise RecognizerError(f"recognizer {type_}: tier must be 1, 2, 3 or 4, got {tier!r}")
    if tier is None and type_ not in known_types:
        tier = 4
    return Recognizer(type_, compiled, _check_score(spec.get("score", 0.9), f"recognizer {type_}"), validator,
                      words["context"], bool(spec.get("context_required", False)), words["not_after"], tier, "user")


def deny_list_recognizers(deny_list, known_types=()):
    """One recognizer per type of `{"PERSON": ["Zorblax", ...]}`: each entry as a whole word, any case (Presidio's
    deny list)."""
    if not deny_list:
        return []
    if not isinstance(deny_list, dict):
        raise RecognizerError(f"deny_list must be a dict type -> list of words, got {type(deny_list).__name__}")
    out = []
    for type_, words in deny_list.items():
        if isinstance(words, str) or not isinstance(words, (list, tuple)) or not all(
                isinstance(w, str) and w.strip() for w in words):
            raise RecognizerError(f"deny_list[{type_!r}] must be a list of non-empty strings, got {words!r}")
        alternatives = "|".join(re.escape(w.strip()) for w in sorted(set(words), key=len, reverse=True))
        out.append(user_recognizer({"type": type_, "pattern": rf"(?<!\w)(?:{alternatives})(?!\w)", "score": 1.0},
                                   known_types))
        out[-1] = dataclasses.replace(out[-1], source="deny_list")
    return out


def check_allow_list(allow_list):
    if not allow_list:
        return frozenset()
    if isinstance(allow_list, str) or not all(isinstance(w, str) and w.strip() for w in allow_list):
        raise RecognizerError(f"allow_list must be a list of non-empty strings, got {allow_list!r}")
    return frozenset(w.strip() for w in allow_list)


@dataclasses.dataclass(frozen=True)
class Evidence:
    """What the decode is told besides the model: recognizers (built-in and the caller's) and an allow list. Built
    once per pipeline or call (`evidence_from`); `find(text)` runs the patterns once per text."""

    recognizers: tuple = ()
    allow_list: frozenset = frozenset()

    def find(self, text):
        return _find(self, fold_width(text))

    def __bool__(self):
        return bool(self.recognizers or self.allow_list)


# Four or more one-character words, at least one a digit, one or two spaces apart: "5 3 6 - 2 2 - 8 4 9 1", text
# spaced out by OCR or by a form's boxes.
_SPACED_RUN = re.compile(r"(?<!\S)\S(?!\S)(?: {1,2}\S(?!\S)){3,}")


def _close_spaced_runs(text):
    """`text` with its spaced-out runs closed up ("5 3 6 - 2 2" -> "536-22"; two spaces, between groups, become
    one), and where each of its characters stands in `text`; `None` where there is no such run."""
    runs = [m for m in _SPACED_RUN.finditer(text) if any(c.isdigit() for c in m.group())]
    if not runs:
        return None
    view, where, cursor = [], [], 0
    for run in runs:
        view.append(text[cursor:run.start()])
        where.extend(range(cursor, run.start()))
        for piece in re.finditer(r"\S|  ", run.group()):
            view.append(piece.group()[0])
            where.append(run.start() + piece.start())
        cursor = run.end()
    view.append(text[cursor:])
    where.extend(range(cursor, len(text)))
    return "".join(view), where


@functools.lru_cache(maxsize=4)
def _find(evidence, text):
    """Non-overlapping matches of `text`, sorted: where two overlap, the longer wins, then the earlier recognizer
    (a user's recognizer and a deny list come before the built-in ones). Spaced-out runs are read closed up, so an
    identifier typed one digit at a time is still matched (and its span still covers its spaces). Cached: a text's
    windows ask in turn."""
    closed = _close_spaced_runs(text)
    view, where = closed if closed else (text, None)
    ranked = []
    for rank, recognizer in enumerate(evidence.recognizers):
        for match in recognizer.matches(view):
            if where is not None:
                match = dataclasses.replace(match, start=where[match.start], end=where[match.end - 1] + 1)
            ranked.append(((-(match.end - match.start), rank, match.start), match))
    kept = []
    for _, match in sorted(ranked, key=lambda pair: pair[0]):
        if all(match.end <= k.start or match.start >= k.end for k in kept):
            kept.append(match)
    return tuple(sorted(kept, key=lambda m: m.start))


def evidence_from(recognizers=None, allow_list=None, deny_list=None, builtin=True, known_types=()):
    """An `Evidence` from a caller's recognizer dicts, allow list and deny list, with the built-in recognizers unless
    `builtin` is False; a `RecognizerError` naming the first bad entry."""
    if recognizers is not None and (isinstance(recognizers, (str, dict)) or not hasattr(recognizers, "__iter__")):
        raise RecognizerError(f"recognizers must be a list of dicts, got {type(recognizers).__name__}")
    own = [user_recognizer(spec, known_types) for spec in recognizers or ()]
    own += deny_list_recognizers(deny_list, known_types)
    return Evidence(tuple(own) + (BUILTIN_RECOGNIZERS if builtin else ()), check_allow_list(allow_list))


def join_deny_lists(first, second):
    """`second` added to `first` type by type, the words of each in order (neither is changed)."""
    joined = dict(first or {})
    for type_, words in (second or {}).items():
        joined[type_] = list(joined.get(type_, [])) + list(words)
    return joined


def config_evidence(config, recognizers=None, allow_list=None, deny_list=None):
    """The `Evidence` a model's config saves (`recognizers`, `allow_list`, `deny_list`, `builtin_recognizers`), with
    a caller's recognizers and lists added to it: what every path from a model's outputs to entities decodes with."""
    deny = join_deny_lists(getattr(config, "deny_list", None), deny_list if isinstance(deny_list, dict) else None)
    return evidence_from(
        list(getattr(config, "recognizers", None) or []) + list(recognizers or []),
        list(getattr(config, "allow_list", None) or []) + list(allow_list or []),
        deny if isinstance(deny_list, dict) or deny_list is None else deny_list,  # a bad one is refused, named
        builtin=getattr(config, "builtin_recognizers", True), known_types=tuple(config.type_to_tier or ()))


__all__ = ["VALIDATORS", "Recognizer", "RecognizerError", "Match", "Evidence", "BUILTIN_RECOGNIZERS",
           "evidence_from", "config_evidence", "join_deny_lists", "user_recognizer", "ssn_valid", "card_valid", "card_issuer_valid", "ip_valid",
           "email_valid", "mac_valid", "phone_valid", "url_valid", "imei_valid"]
