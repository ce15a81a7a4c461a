"""Format-preserving surrogates: a realistic fake value in place of each PII value ("hide in plain sight").

A surrogate keeps the shape a reader or a downstream parser relies on (an SSN stays ``ddd-dd-dddd`` with a
plausible area number, a card number keeps its grouping and passes the Luhn check, an IBAN keeps its country,
length and a valid mod-97 checksum, a date keeps its field order, padding and month-name style) while carrying
none of the original's content beyond that shape (and, for cards, the first two digits, which name most card networks).

Every surrogate is drawn from a random generator seeded with HMAC-SHA256(key, type, value), so the same value of
the same type always gets the same surrogate under one key: within a document, and across documents and runs
when the caller keeps the key. Without the key the mapping cannot be recomputed; with it, it can, so the key is a
secret. A surrogate is never equal to its original (compared case-insensitively), including one-character and
punctuation-only values.
"""

import calendar
import datetime
import functools
import hashlib
import hmac
import ipaddress
import random
import re
import string

from faker import Faker

from piiner.hub.checksums import fold_width, iban_check_digits, iban_valid, luhn_check_digit, luhn_valid  # noqa: F401

ASCII_DIGITS = frozenset(string.digits)

# Short vocabularies for the categorical types, where a random string would read as noise.
CATEGORY_VALUES = {
    "GENDER": ("female", "male", "non-binary", "woman", "man"),
    "NATIONALITY": ("Canadian", "Brazilian", "Norwegian", "Kenyan", "Japanese", "Irish", "Chilean", "Polish"),
    "RELIGION": ("Buddhist", "Catholic", "Hindu", "Jewish", "Muslim", "Protestant", "Sikh", "atheist"),
    "MARITAL_STATUS": ("single", "married", "divorced", "widowed", "separated"),
    "SEXUAL_ORIENTATION": ("heterosexual", "gay", "lesbian", "bisexual", "asexual"),
    "POLITICAL_AFFILIATION": ("Green Party member", "Liberal", "Conservative", "independent", "Social Democrat"),
    "HEALTH_CONDITION": ("asthma", "type 2 diabetes", "hypertension", "migraine", "eczema", "anemia"),
    "CRIMINAL_RECORD": ("a misdemeanor conviction", "a DUI conviction", "a prior arrest", "a petty theft charge"),
}
NAME_TITLES = frozenset({"mr", "mrs", "ms", "miss", "mx", "dr", "prof", "sir", "madam", "rev"})
MONTHS_FULL = tuple(calendar.month_name)[1:]
MONTHS_ABBR = tuple(calendar.month_abbr)[1:]
WEEKDAYS_FULL = tuple(calendar.day_name)
WEEKDAYS_ABBR = tuple(calendar.day_abbr)
ORDINAL_SUFFIXES = frozenset({"st", "nd", "rd", "th"})
WEEKDAY_NAMES = frozenset(w.lower() for w in WEEKDAYS_FULL + WEEKDAYS_ABBR)


def keyed_digest(key, purpose, *parts):
    """HMAC-SHA256 of ``parts`` under ``key``, domain-separated by ``purpose`` so that the hash mode and the
    surrogate seeds never share a value."""
    message = b"\x00".join([purpose.encode()] + [p.encode("utf-8", "surrogatepass") for p in parts])
    return hmac.new(key, message, hashlib.sha256).digest()



# ---------------------------------------------------------------------------------------------------------------
# Shape helpers


def match_case(template, text):
    """``text`` in the case style of ``template``: UPPER, lower, or as generated (Title for names)."""
    letters = [c for c in template if c.isalpha()]
    if letters and all(c.isupper() for c in letters) and len(letters) > 1:
        return text.upper()
    if letters and all(c.islower() for c in letters):
        return text.lower()
    return text


def fill_layout(layout, chars, is_slot):
    """Write ``chars`` in order into the positions of ``layout`` where ``is_slot(ch)`` holds; the rest is kept."""
    chars = iter(chars)
    return "".join(next(chars) if is_slot(ch) else ch for ch in layout)


def random_like(value, rng):
    """Character-class preserving noise: digit -> digit, upper -> upper, lower -> lower (letters become ASCII),
    everything else (separators, spaces, symbols) kept. A digit run that does not start with 0 keeps a non-zero
    first digit, so "$85,000" stays a plausible amount."""
    out = []
    for i, ch in enumerate(value):
        if ch.isdigit():
            run_start = i == 0 or not value[i - 1].isdigit()
            out.append(str(rng.randint(1, 9)) if run_start and ch != "0" else str(rng.randint(0, 9)))
        elif ch.isalpha():
            pool = string.ascii_uppercase if ch.isupper() else string.ascii_lowercase
            out.append(rng.choice(pool))
        else:
            out.append(ch)
    return "".join(out)


def random_letters(value, rng):
    """Last resort for values whose shape leaves nothing to vary (punctuation only): letters of the same length,
    the first one different from the original's."""
    first = rng.choice([c for c in string.ascii_lowercase if c != value[:1].lower()])
    return first + "".join(rng.choice(string.ascii_lowercase) for _ in value[1:])


# ---------------------------------------------------------------------------------------------------------------
# Per-type generators: each takes (value, rng, faker) and returns a candidate, or None to fall back to random_like.


def fake_ssn(value, rng, faker):
    if sum(c in ASCII_DIGITS for c in value) != 9:
        return None
    # Never-issued areas (000, 666, 900-999), groups (00) and serials (0000) are what validators reject.
    area = rng.choice([a for a in range(1, 900) if a != 666])
    digits = f"{area:03d}{rng.randint(1, 99):02d}{rng.randint(1, 9999):04d}"
    return fill_layout(value, digits, ASCII_DIGITS.__contains__)


def fake_card(value, rng, faker):
    digits = [c for c in value if c in ASCII_DIGITS]
    if not 12 <= len(digits) <= 19:
        return None
    # Kept: the first two digits, so that the surrogate is a number of the same network (34 and 37 American Express,
    # 51-55 Mastercard); the issuer's digits after them are drawn anew.
    payload = "".join(digits[:2]) + "".join(str(rng.randint(0, 9)) for _ in range(len(digits) - 3))
    return fill_layout(value, payload + luhn_check_digit(payload), ASCII_DIGITS.__contains__)


def fake_iban(value, rng, faker):
    compact = re.sub(r"[\s-]", "", value)
    if not re.fullmatch(r"[A-Za-z]{2}\d{2}[A-Za-z0-9]{1,30}", compact):
        return None
    country = compact[:2].upper()
    bban = "".join(
        str(rng.randint(0, 9)) if c.isdigit() else rng.choice(string.ascii_uppercase) for c in compact[4:]
    )
    new_compact = country + iban_check_digits(country, bban) + bban
    return fill_layout(value, new_compact, str.isalnum)


def fake_phone(value, rng, faker):
    """New digits in the number's layout. Kept: a country code after "+" or "00" ("+44 20 ...", "0049 30 ..."), a
    trunk "0" written in brackets after it ("+49 (0)30 ..."), and a national number's leading 0 ("020 7946 ...")."""
    digits = [c for c in value if c in ASCII_DIGITS]
    if len(digits) < 3:
        return None
    kept = ""
    match = re.match(r"\s*(?:\+|00)(\d{1,3})\D", value)
    if match:  # an international prefix separated from the rest is a country code: keep it
        kept = value[match.start(1) - (2 if match.group(0).lstrip().startswith("00") else 0):match.end(1)]
        kept = "".join(c for c in kept if c in ASCII_DIGITS)
        rest_text = value[match.end(1):]
    else:
        rest_text = value
    trunk = re.match(r"\D*\(0\)", rest_text) or re.match(r"\s*\(?0", rest_text)
    if trunk:
        kept += "0"
    new = list(kept + str(rng.randint(2, 9)) + "".join(str(rng.randint(0, 9))
                                                      for _ in range(len(digits) - len(kept) - 1)))
    international = match is not None and not match.group(1) == "1"
    if not international and (len(new) == 10 or (len(new) == 11 and new[0] == "1")):
        new[-10], new[-7] = str(rng.randint(2, 9)), str(rng.randint(2, 9))  # North American area code and exchange
    return fill_layout(value, "".join(new), ASCII_DIGITS.__contains__)


def _fake_word_runs(value, rng, faker):
    """Letter runs become name-like words in the run's case, digit runs random digits; separators kept."""
    def word(match):
        run = match.group(0)
        if run.isdigit():
            return random_like(run, rng)
        fake = faker.last_name() if rng.random() < 0.5 else faker.first_name()
        fake = re.sub(r"[^A-Za-z]", "", fake) or "alex"
        return match_case(run, fake) if len(run) > 1 else fake[0].lower() if run.islower() else fake[0].upper()

    return re.sub(r"[^\W\d_]+|\d+", word, value)


def _fake_host(host, rng, faker):
    labels = host.split(".")
    keep_tail = 1 if len(labels) > 1 else 0  # the top-level domain says little and keeps the text readable
    keep_head = 1 if len(labels) > 2 and labels[0].lower() == "www" else 0
    middle = labels[keep_head:len(labels) - keep_tail]
    fakes = [re.sub(r"[^a-z0-9]", "", faker.domain_word().lower()) or "example" for _ in middle]
    return ".".join(labels[:keep_head] + fakes + labels[len(labels) - keep_tail:])


def fake_email(value, rng, faker):
    local, at, domain = value.rpartition("@")
    if not at or not local or not domain:
        return None
    return _fake_word_runs(local, rng, faker) + "@" + _fake_host(domain, rng, faker)


def fake_username(value, rng, faker):
    return _fake_word_runs(value, rng, faker)


def fake_url(value, rng, faker):
    match = re.match(r"(?i)([a-z][a-z0-9+.-]*://)?([^/?#:\s]+)(.*)", value, re.S)
    if not match or "." not in match.group(2):
        return None
    scheme, host, rest = match.groups()
    return (scheme or "") + _fake_host(host, rng, faker) + random_like(rest, rng)


def fake_ip(value, rng, faker):
    try:
        address = ipaddress.ip_address(value.strip())
    except ValueError:
        return None
    if address.version == 4:
        octets = [rng.randint(11, 223)] + [rng.randint(0, 255) for _ in range(2)] + [rng.randint(1, 254)]
        return value.replace(value.strip(), ".".join(map(str, octets)))
    hex_digits = "0123456789abcdef"
    return "".join(
        (rng.choice(hex_digits).upper() if c.isupper() else rng.choice(hex_digits)) if c in string.hexdigits else c
        for c in value
    )


def fake_person(value, word_fake):
    """A name word by word: titles kept, an initial stays an initial, every other word replaced by `word_fake(word,
    pool)`, where pool says whether the word reads as a first name or a last name."""
    parts = re.split(r"(\s+)", value)
    names = [i for i, p in enumerate(parts) if p and not p.isspace() and p.rstrip(".").lower() not in NAME_TITLES]
    if not names:
        return None
    for n, i in enumerate(names):
        original = parts[i]
        if re.fullmatch(r"[^\W\d_]\.?", original):  # an initial stays an initial
            parts[i] = word_fake(original[0], "initial") + original[1:]
            continue
        alone = len(names) == 1
        last = n == len(names) - 1 and not alone or alone and original.capitalize() not in _FIRST_NAMES
        parts[i] = match_case(original, word_fake(original, "last" if last else "first"))
    return "".join(parts)


_FIRST_NAMES = frozenset(next(p for p in Faker("en_US").get_providers()
                              if type(p).__module__.endswith("person.en_US")).first_names)


def fake_category(pii_type):
    def generate(value, rng, faker):
        choices = [v for v in CATEGORY_VALUES[pii_type] if v.casefold() != value.strip().casefold()]
        return match_case(value, rng.choice(choices))

    return generate


def fake_location(value, rng, faker):
    return match_case(value, faker.city())


def fake_organization(value, rng, faker):
    return match_case(value, faker.company())


def fake_street_address(value, rng, faker):
    return match_case(value, faker.street_address())


BASE58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


def fake_crypto_wallet(value, rng, faker):
    if re.fullmatch(r"0[xX][0-9a-fA-F]+", value):
        return value[:2] + "".join(
            rng.choice("0123456789ABCDEF" if c.isupper() else "0123456789abcdef") for c in value[2:])
    if re.fullmatch(r"bc1[02-9ac-hj-np-z]+", value):  # bech32: its own alphabet, lower case
        return "bc1" + "".join(rng.choice("023456789acdefghjklmnpqrstuvwxyz") for _ in value[3:])
    if re.fullmatch(f"[{BASE58}]+", value):  # base58 (no 0, O, I or l): the version character kept
        return value[0] + "".join(rng.choice(BASE58) for _ in value[1:])
    return None


def fake_hex_device(value, rng, faker):
    """A MAC address (or any hex-and-separator identifier) as hex digits in the same case and layout."""
    if not re.fullmatch(r"[0-9A-Fa-f]{2}([:-])(?:[0-9A-Fa-f]{2}\1){4}[0-9A-Fa-f]{2}|(?:[0-9A-Fa-f]{4}\.){2}[0-9A-Fa-f]{4}",
                        value):
        return None
    return "".join((rng.choice("0123456789ABCDEF") if c.isupper() else rng.choice("0123456789abcdef"))
                   if c in string.hexdigits else c for c in value)


# ---- dates ----------------------------------------------------------------------------------------------------

# A time of day (9:05, 14:30:59) is one token, so its digits never read as date fields.
TIME_OF_DAY = re.compile(r"(?<!\d)\d{1,2}:\d{2}(?::\d{2})?(?!\d)")
_DATE_TOKEN = re.compile(TIME_OF_DAY.pattern + r"|\d+|[^\W\d_]+|.", re.S)
TWELVE_HOUR = re.compile(r"(?i)(?<![^\W\d_])[ap]\.?m\b")


def _fake_time(token, rng, twelve_hour):
    """A random valid time with the token's fields and hour padding (1-12 on a 12-hour clock)."""
    fields = token.split(":")
    hour = rng.randint(1, 12) if twelve_hour else rng.randint(0, 23)
    new = [f"{hour:0{len(fields[0])}d}"] + [f"{rng.randint(0, 59):02d}" for _ in fields[1:]]
    return ":".join(new)


def _month_index(word):
    w = word.lower()
    if w == "sept":
        return 9
    for names in (MONTHS_FULL, MONTHS_ABBR):
        for i, name in enumerate(names):
            if w == name.lower():
                return i + 1
    return None


def _parse_date(tokens):
    """Read the tokens of a date: ``(roles, year, month, day, ambiguous)`` with ``roles`` mapping token index to
    "year" / "month" / "month_name" / "day"; None when the tokens do not read as one date."""
    numbers = [i for i, t in enumerate(tokens) if t.isdecimal()]
    months = [i for i, t in enumerate(tokens) if t.isalpha() and _month_index(t)]
    roles = {}
    ambiguous = False
    if len(months) == 1 and 1 <= len(numbers) <= 2:
        roles[months[0]] = "month_name"
        years = [i for i in numbers if len(tokens[i]) == 4]
        days = [i for i in numbers if len(tokens[i]) <= 2]
        if len(years) > 1 or len(years) + len(days) != len(numbers):
            return None
        roles.update({i: "year" for i in years})
        if days:
            roles[days[0]] = "day"
        if len(days) == 2:  # "5 March 21"
            roles[days[1]] = "year"
    elif not months and len(numbers) == 1 and len(tokens[numbers[0]]) == 4:  # a year alone ("S/P MI 1992")
        roles[numbers[0]] = "year"
    elif (not months and len(numbers) == 1 and numbers[0] + 1 < len(tokens)
          and tokens[numbers[0] + 1].lower() in ORDINAL_SUFFIXES):  # a day alone ("the 19th")
        roles[numbers[0]] = "day"
    elif not months and len(numbers) in (2, 3):
        first = tokens[numbers[0]]
        if len(numbers) == 3:
            if len(first) == 4:
                order = ("year", "month", "day")
            elif int(first) > 12:
                order = ("day", "month", "year")
            else:
                # Month first is the US reading; if the day also fits as a month the order is a guess.
                order = ("month", "day", "year")
                ambiguous = int(tokens[numbers[1]]) <= 12
        else:
            order = ("year", "month") if len(first) == 4 else ("month", "year")
        roles.update(zip(numbers, order))
    else:
        return None
    fields = {}
    for i, role in roles.items():
        fields[role] = _month_index(tokens[i]) if role == "month_name" else int(tokens[i])
        if role == "year" and len(tokens[i]) not in (2, 4):
            return None
    year = fields.get("year", 2000)
    if "year" in fields and year < 100:
        year += 1900 if year > 30 else 2000
    month = fields.get("month", fields.get("month_name", 1))
    day = fields.get("day", 1)
    try:
        datetime.date(max(year, 1), month, day)
    except (ValueError, TypeError):
        return None
    return roles, max(year, 1), month, day, ambiguous


def fake_date(value, rng, faker):
    tokens = _DATE_TOKEN.findall(value)
    twelve_hour = bool(TWELVE_HOUR.search(value))
    parsed = _parse_date(tokens)
    if parsed is None:
        if any(t.isdigit() for t in tokens) or not any(TIME_OF_DAY.fullmatch(t) for t in tokens):
            return None
        # A time alone ("14:30", "9:05 pm"): new times, the rest kept.
        return "".join(_fake_time(t, rng, twelve_hour) if TIME_OF_DAY.fullmatch(t) else t for t in tokens)
    roles, year, month, day, ambiguous = parsed
    shift = datetime.timedelta(days=rng.randint(30, 1500) * rng.choice((-1, 1)))
    base = datetime.date(year, month, day)
    try:
        new = base + shift
    except OverflowError:
        new = base - shift
    if ambiguous and new.day > 12:  # keep it a valid date whichever way the reader takes the order
        new = new.replace(day=rng.randint(1, 12))

    out = []
    for i, tok in enumerate(tokens):
        role = roles.get(i)
        if role == "year":
            out.append(f"{new.year:04d}" if len(tok) == 4 else f"{new.year % 100:02d}")
        elif role in ("month", "day"):
            number = new.month if role == "month" else new.day
            ordinal = i + 1 < len(tokens) and tokens[i + 1].lower() in ORDINAL_SUFFIXES  # "5th", never "05th"
            out.append(f"{number:02d}" if len(tok) == 2 and not ordinal else str(number))
        elif TIME_OF_DAY.fullmatch(tok):
            out.append(_fake_time(tok, rng, twelve_hour))
        elif role == "month_name":
            names = MONTHS_FULL if len(tok) > 3 and tok.lower() != "sept" else MONTHS_ABBR
            out.append(match_case(tok, names[new.month - 1]))
        elif tok.lower() in ORDINAL_SUFFIXES and roles.get(i - 1) == "day":
            suffix = "th" if 11 <= new.day <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(new.day % 10, "th")
            out.append(match_case(tok, suffix))
        elif tok.lower() in WEEKDAY_NAMES:
            names = WEEKDAYS_FULL if len(tok) > 3 else WEEKDAYS_ABBR
            out.append(match_case(tok, names[new.weekday()]))
        else:
            out.append(tok)
    return "".join(out)


GENERATORS = {
    "SSN": fake_ssn,
    "TAX_ID": fake_ssn,
    "CREDIT_CARD": fake_card,
    "IBAN": fake_iban,
    "PHONE": fake_phone,
    "EMAIL": fake_email,
    "USERNAME": fake_username,
    "URL": fake_url,
    "IP_ADDRESS": fake_ip,
    "DATE": fake_date,
    "DATE_OF_BIRTH": fake_date,
    "LOCATION": fake_location,
    "ORGANIZATION": fake_organization,
    "STREET_ADDRESS": fake_street_address,
    "CRYPTO_WALLET": fake_crypto_wallet,
    "DEVICE_ID": fake_hex_device,
    **{t: fake_category(t) for t in CATEGORY_VALUES},
}


def canonical_value(value, pii_type):
    """What makes two values one thing: an e-mail address in any case; a card, phone, SSN or IBAN in any layout (its
    digits and letters); a MAC address without its separators, in any case. The surrogate's seed is drawn from it, so
    "4111 1111 1111 1111" and "4111-1111-1111-1111" get the same digits, each in its own layout."""
    if pii_type in ("EMAIL", "PERSON"):
        return value.casefold()
    if pii_type in ("CREDIT_CARD", "PHONE", "SSN", "TAX_ID", "IBAN", "DEVICE_ID", "BANK_ACCOUNT"):
        return re.sub(r"[\s().:+-]", "", value).upper()
    return value


def _stands_in(candidate, text):
    return re.search(rf"(?<!\w){re.escape(candidate)}(?!\w)", text) is not None


class _BoundedDict(dict):
    """A dict that forgets its oldest entries past `size` (insertion order)."""

    def __init__(self, size):
        super().__init__()
        self.size = size

    def setdefault(self, key, value):
        if key not in self and len(self) >= self.size:
            del self[next(iter(self))]
        return super().setdefault(key, value)


class SurrogateGenerator:
    """Maps (value, type) to a realistic, format-preserving fake, deterministically under ``key`` (bytes).

    A value is read as the detectors read it (`fold_width`): written in full-width digits or letters, it gets the
    surrogate of its ASCII form.

    Example::

        >>> gen = SurrogateGenerator(b"secret")
        >>> gen("123-45-6789", "SSN") == gen("123-45-6789", "SSN") != "123-45-6789"
        True
    """

    MAX_ATTEMPTS = 8

    def __init__(self, key, locale="en_US", cache_size=4096):
        if not isinstance(key, bytes) or not key:
            raise TypeError("SurrogateGenerator needs a non-empty bytes key")
        self._key = key
        self._faker = Faker(locale)
        # Bounded, so a long stream keeps flat memory; the mapping is a pure function of the key anyway.
        self._cached = functools.lru_cache(maxsize=cache_size)(self._generate)
        # Which value each surrogate was given to, so two values never share one (bounded like the cache).
        self._issued = _BoundedDict(cache_size * 4)

    def __call__(self, value, pii_type, avoid=""):
        """The surrogate of `value`; never one already given to another value by this generator, and never one that
        stands in `avoid` (the text being redacted: "age 34 ... age 49" must not become "age 49 ... age 97")."""
        value = fold_width(value)
        canonical = canonical_value(value, pii_type)
        if pii_type == "EMAIL":
            value = canonical  # one address in any case: one surrogate
        for attempt in range(self.MAX_ATTEMPTS):
            candidate = self._cached(value, pii_type, canonical, attempt)
            owner = self._issued.setdefault((pii_type, candidate.casefold()), canonical)
            if owner == canonical and not (avoid and _stands_in(candidate, avoid)):
                return candidate
        return candidate

    def _word_fake(self, word, pool, attempt):
        """One word of a person's name: the same word gets the same fake wherever it stands, so "John Smith", "JOHN"
        and "Smith" in one document stay one fake person."""
        seed = int.from_bytes(keyed_digest(self._key, "surrogate", "PERSON", pool, word.casefold(), str(attempt)), "big")
        if pool == "initial":
            return random.Random(seed).choice(string.ascii_uppercase)
        self._faker.seed_instance(seed)
        return self._faker.last_name() if pool == "last" else self._faker.first_name()

    def _generate(self, value, pii_type, canonical, first_attempt):
        generator = GENERATORS.get(pii_type)
        for attempt in range(first_attempt * self.MAX_ATTEMPTS, (first_attempt + 1) * self.MAX_ATTEMPTS):
            seed = int.from_bytes(keyed_digest(self._key, "surrogate", pii_type, canonical, str(attempt)), "big")
            rng = random.Random(seed)
            if pii_type == "PERSON":  # word by word, each word's fake seeded by the word itself
                candidate = fake_person(value, lambda word, pool: self._word_fake(word, pool, attempt))
            else:
                self._faker.seed_instance(seed)
                candidate = generator(value, rng, self._faker) if generator else None
            if candidate is None:
                candidate = random_like(value, rng)
            if candidate.casefold() != value.casefold():
                return candidate
        return random_letters(value, random.Random(seed))
