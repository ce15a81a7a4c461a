"""Value generators: one function per PII type, ``gen(rng, fake) -> str``, plus look-alike non-PII values.

``rng`` is a ``random.Random`` and ``fake`` a ``faker.Faker`` seeded from it, both owned by the caller for one
record, so a value depends only on the record's seed. Identifiers with a real check digit get a valid one
(Luhn for cards and IMEIs, mod-97 for IBANs, ABA routing weights, VIN check digit): a model should see the
numbers it will meet, and a validator downstream should not reject our training data.

Every generator takes ``held_out``: identifiers come in the layouts people write them in (an SSN with dashes,
spaces or none; a card as 4-4-4-4 or 4-6-5 with spaces, dashes or nothing; a phone number national or
international, with or without an extension; a date in any common order and spelling), and a few further layouts
of each are kept for the "formats" test set alone (``held_out=True``), so it measures layouts no training record
used.
"""

import re
import string

import faker

from piiner.hub.checksums import iban_check_digits, iban_valid, luhn_check_digit, luhn_valid  # noqa: F401

DIGITS = string.digits
UPPER = string.ascii_uppercase
ALNUM_UPPER = UPPER + DIGITS
HEX = "0123456789abcdef"
BASE58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
BECH32 = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"


def _digits(rng, n):
    return "".join(rng.choice(DIGITS) for _ in range(n))


def _chars(rng, alphabet, n):
    return "".join(rng.choice(alphabet) for _ in range(n))


def _group(s, sizes, sep):
    out, i = [], 0
    for size in sizes:
        out.append(s[i:i + size])
        i += size
    if i < len(s):
        out.append(s[i:])
    return sep.join(out)


def _pick(rng, train, held_out_layouts, held_out):
    """One layout: from `train`, or from `held_out_layouts` alone for the formats test set."""
    return rng.choice(held_out_layouts if held_out else train)


# ----------------------------------------------------------------------------------------------- checksums
# Luhn and IBAN check digits come from the repo-wide `checksums` module; the VIN's is only needed here.

_VIN_VALUES = {**{str(d): d for d in range(10)}, **dict(zip("ABCDEFGH", range(1, 9))),
               **dict(zip("JKLMN", range(1, 6))), "P": 7, "R": 9, **dict(zip("STUVWXYZ", range(2, 10)))}
_VIN_WEIGHTS = (8, 7, 6, 5, 4, 3, 2, 10, 0, 9, 8, 7, 6, 5, 4, 3, 2)
VIN_ALPHABET = "ABCDEFGHJKLMNPRSTUVWXYZ0123456789"  # no I, O, Q


def vin_check_digit(vin17):
    total = sum(_VIN_VALUES[c] * w for c, w in zip(vin17, _VIN_WEIGHTS))
    remainder = total % 11
    return "X" if remainder == 10 else str(remainder)


def vin_valid(vin):
    return len(vin) == 17 and all(c in VIN_ALPHABET for c in vin) and vin[8] == vin_check_digit(vin)


def aba_valid(routing):
    if len(routing) != 9 or not routing.isdigit():
        return False
    d = [int(c) for c in routing]
    return (3 * (d[0] + d[3] + d[6]) + 7 * (d[1] + d[4] + d[7]) + (d[2] + d[5] + d[8])) % 10 == 0


# ------------------------------------------------------------------------------------------------- tier 1

def ssn(rng, fake, held_out=False):
    area = rng.randint(1, 898)
    area += area >= 666  # areas 001-899 except 666: 000, 666 and 9xx are never issued
    number = f"{area:03d}{rng.randint(1, 99):02d}{rng.randint(1, 9999):04d}"
    sep = _pick(rng, ["-", "-", "-", " ", ""], [".", "\u2013", " - "], held_out)
    return _group(number, (3, 2, 4), sep)


_CARD_PREFIXES = (("4", 16), ("51", 16), ("52", 16), ("53", 16), ("54", 16), ("55", 16), ("2221", 16),
                  ("2720", 16), ("34", 15), ("37", 15), ("6011", 16), ("65", 16), ("4", 13))


def credit_card(rng, fake, held_out=False):
    prefix, length = rng.choice(_CARD_PREFIXES)
    payload = prefix + _digits(rng, length - len(prefix) - 1)
    number = payload + luhn_check_digit(payload)
    sep = _pick(rng, [" ", "-", "", " "], [".", "  ", " - "], held_out)
    if length == 15:
        return _group(number, (4, 6, 5), sep)
    if length == 13:
        return number if not held_out else _group(number, (4, 4, 5), sep)
    return _group(number, (4, 4, 4, 4), sep)


def aba_routing(rng):
    while True:
        head = f"{rng.choice([0, 0, 1, 2, 3, 6, 7, 8])}{rng.randint(0, 9)}" + _digits(rng, 6)
        for last in DIGITS:
            if aba_valid(head + last):
                return head + last


def bank_account(rng, fake, held_out=False):
    if held_out:
        return rng.choice((f"{_digits(rng, 3)} {_digits(rng, 3)} {_digits(rng, 4)}", f"{aba_routing(rng)}:{_digits(rng, 10)}",
                           f"{_digits(rng, 2)}.{_digits(rng, 4)}.{_digits(rng, 6)}"))
    kind = rng.random()
    if kind < 0.55:
        return _digits(rng, rng.randint(8, 12))
    if kind < 0.8:
        return aba_routing(rng)
    if kind < 0.9:
        return f"{_digits(rng, 4)}-{_digits(rng, 4)}-{_digits(rng, rng.randint(2, 4))}"
    return f"{_digits(rng, 2)}-{_digits(rng, 4)}-{_digits(rng, 7)}-{_digits(rng, 2)}"  # NZ-style


def passport_number(rng, fake, held_out=False):
    if held_out:  # lower-case letters, as typed into a chat; a space after the letter
        return rng.choice((rng.choice(UPPER).lower() + _digits(rng, 8), f"{rng.choice(UPPER)} {_digits(rng, 8)}"))
    kind = rng.randrange(5)
    if kind == 0:
        return _digits(rng, 9)  # US book, UK
    if kind == 1:
        return rng.choice(UPPER) + _digits(rng, 8)  # US next generation
    if kind == 2:
        return _chars(rng, UPPER, 2) + _digits(rng, 7)  # FR, many others
    if kind == 3:
        return rng.choice(UPPER) + _digits(rng, 7)  # IN
    return _chars(rng, "CFGHJKLMNPRTVWXYZ", 1) + _chars(rng, "CFGHJKLMNPRTVWXYZ0123456789", 8)  # DE


def drivers_license(rng, fake, held_out=False):
    if held_out:
        return rng.choice((f"{rng.choice(UPPER)}{_digits(rng, 3)} {_digits(rng, 4)} {_digits(rng, 4)}",
                           f"{rng.choice(UPPER)}-{_digits(rng, 3)}-{_digits(rng, 3)}-{_digits(rng, 3)}"))
    kind = rng.randrange(7)
    if kind == 0:
        return rng.choice(UPPER) + _digits(rng, 7)  # CA
    if kind == 1:
        return _digits(rng, 9)  # NY
    if kind == 2:
        d = rng.choice(UPPER) + _digits(rng, 12)
        return f"{d[0:4]}-{d[4:7]}-{d[7:9]}-{d[9:12]}-{d[12]}"  # FL
    if kind == 3:
        return _digits(rng, 8)  # TX
    if kind == 4:
        return "WDL" + _chars(rng, ALNUM_UPPER, 9)  # WA
    if kind == 5:
        return rng.choice(UPPER) + _digits(rng, 3) + "-" + _digits(rng, 4) + "-" + _digits(rng, 4)  # IL
    return rng.choice(UPPER) + _digits(rng, 2) + "-" + _digits(rng, 2) + "-" + _digits(rng, 4)  # NJ-ish


_EIN_PREFIXES = [p for p in range(1, 100) if p not in (7, 8, 9, 17, 18, 19, 28, 29, 49, 69, 70, 78, 79, 89, 96, 97)]
_ITIN_GROUPS = list(range(50, 66)) + list(range(70, 89)) + [90, 91, 92] + list(range(94, 100))


def tax_id(rng, fake, held_out=False):
    if held_out:
        return rng.choice((f"{rng.choice(_EIN_PREFIXES):02d} {_digits(rng, 7)}",
                           _group(f"9{_digits(rng, 2)}{rng.choice(_ITIN_GROUPS)}{_digits(rng, 4)}", (3, 2, 4), ".")))
    kind = rng.random()
    if kind < 0.5:
        return f"{rng.choice(_EIN_PREFIXES):02d}-{_digits(rng, 7)}"
    if kind < 0.85:
        number = f"9{_digits(rng, 2)}{rng.choice(_ITIN_GROUPS)}{_digits(rng, 4)}"
        return _group(number, (3, 2, 4), rng.choice(["-", "-", " "]))
    return f"{rng.choice(_EIN_PREFIXES):02d}{_digits(rng, 7)}"


# ------------------------------------------------------------------------------------------------- tier 2

_TITLES = ("Dr.", "Mr.", "Mrs.", "Ms.", "Prof.", "Dr", "Mr", "Miss", "Sir", "Rev.")


def person(rng, fake, held_out=False):
    kind = rng.random()
    if kind < 0.55:
        name = f"{fake.first_name()} {fake.last_name()}"
    elif kind < 0.7:
        name = f"{fake.first_name()} {rng.choice(UPPER)}. {fake.last_name()}"
    elif kind < 0.8:
        name = f"{fake.first_name()} {fake.first_name()} {fake.last_name()}"
    elif kind < 0.9:
        name = fake.first_name()
    else:
        name = f"{fake.last_name()}-{fake.last_name()}" if rng.random() < 0.3 else fake.last_name()
    if rng.random() < 0.1:  # a title belongs to the name it introduces ("Dr. Alan Turing")
        name = f"{rng.choice(_TITLES)} {name}"
    if rng.random() < 0.04:  # "SMITH, John", as forms and rosters write it
        first, _, last = name.rpartition(" ")
        name = f"{last.upper()}, {first}" if first else name
    return _vary_case(rng, name, 0.06)


def email(rng, fake, held_out=False):
    first, last = fake.first_name().lower(), fake.last_name().lower()
    local = rng.choice([f"{first}.{last}", f"{first[0]}{last}", f"{first}{rng.randint(1, 99)}", f"{last}_{first}",
                        f"{first}+{rng.choice(['news', 'work', 'shop'])}", fake.user_name()])
    domain = rng.choice([fake.free_email_domain(), fake.free_email_domain(), fake.domain_name(),
                         f"{fake.domain_word()}.{rng.choice(['org', 'edu', 'io', 'co.uk', 'de'])}"])
    if held_out:  # a department subdomain and a long TLD, or a quoted-looking local part
        return rng.choice((f"{local}@{rng.choice(['mail', 'hr', 'billing', 'dept'])}.{fake.domain_word()}."
                           f"{rng.choice(['ac.uk', 'gov.au', 'museum', 'solutions'])}",
                           f"{first}-{last}.{rng.randint(1, 9)}@{domain}".upper()))
    address = f"{local}@{domain}"
    return address.upper() if rng.random() < 0.04 else address


def _extension(rng):
    return rng.choice((f" x{rng.randint(2, 9999)}", f" ext. {rng.randint(2, 999)}", f" ext {rng.randint(2, 999)}",
                       f", ext. {rng.randint(10, 99)}"))


def phone(rng, fake, held_out=False):
    area = f"{rng.randint(2, 9)}{_digits(rng, 2)}"
    exchange = f"{rng.randint(2, 9)}{_digits(rng, 2)}"
    line = _digits(rng, 4)
    if held_out:
        return rng.choice((f"+1.{area}.{exchange}.{line}", f"{area}/{exchange}-{line}", f"({area}){exchange}{line}",
                           f"+1 ({area}) {exchange}-{line} ext.{rng.randint(2, 99)}",
                           f"+{rng.choice(['353', '31', '46'])}-{_digits(rng, 2)}-{_digits(rng, 3)}-{_digits(rng, 4)}"))
    kind = rng.randrange(11)
    if kind == 0:
        number = f"({area}) {exchange}-{line}"
    elif kind == 1:
        number = f"{area}-{exchange}-{line}"
    elif kind == 2:
        number = f"+1 {area} {exchange} {line}"
    elif kind == 3:
        number = f"{area}.{exchange}.{line}"
    elif kind == 4:
        number = f"+1-{area}-{exchange}-{line}"
    elif kind == 5:
        number = f"+44 {rng.choice(['20', '161', '7700'])} {_digits(rng, 3)} {_digits(rng, 4)}"
    elif kind == 6:
        number = f"{area}{exchange}{line}"
    elif kind == 7:
        number = f"1 ({area}) {exchange} {line}"
    elif kind == 8:
        number = f"+{rng.choice(['49', '33', '61', '91', '34'])} {_digits(rng, 3)} {_digits(rng, 3)} {_digits(rng, 4)}"
    elif kind == 9:
        number = f"0{rng.randint(1, 9)}{_digits(rng, 3)} {_digits(rng, 6)}"  # a national trunk prefix (UK, DE, FR)
    else:
        number = f"{exchange}-{line}"  # local, no area code
    return number + (_extension(rng) if rng.random() < 0.12 else "")


_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December")


_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


def _format_date(rng, y, m, d, held_out=False):
    month = _MONTHS[m - 1]
    if held_out:
        return rng.choice((f"{y}/{m:02d}/{d:02d}", f"{d:02d}-{month[:3]}-{y}", f"{month[:3].upper()} {d:02d} {y}",
                           f"{d}.{m}.{y % 100:02d}", f"the {d}{_ordinal(d)} of {month}, {y}"))
    kind = rng.randrange(19)
    if kind == 0:
        return f"{m:02d}/{d:02d}/{y}"
    if kind == 1:
        return f"{y}-{m:02d}-{d:02d}"
    if kind == 2:
        return f"{month} {d}, {y}"
    if kind == 3:
        return f"{d} {month[:3]} {y}"
    if kind == 4:
        return f"{d:02d}.{m:02d}.{y}"
    if kind == 5:
        return f"{m}/{d}/{y % 100:02d}"
    if kind == 6:
        return f"{d} {month} {y}"
    if kind == 7:
        return f"{month[:3]}{'.' if len(month) > 3 else ''} {d}, {y}"
    if kind == 8:
        return f"{d}{_ordinal(d)} of {month} {y}"
    if kind == 9:
        return f"{m}/{d}"  # a short date, as notes write it
    if kind == 10:
        return f"{d:02d}/{m:02d}/{y}"  # day first
    if kind == 11:
        return f"{month} {d}{_ordinal(d)}, {y}"
    if kind == 12:
        return f"{_WEEKDAYS[(d + m) % 7]}, {month} {d}, {y}"
    if kind == 13:
        return f"{month[:3]} {d}"
    if kind == 14:
        return f"{d}-{m}-{y}"
    if kind == 15:
        return f"{month.upper()} {d}, {y}"
    if kind == 16:
        return f"{y}{m:02d}{d:02d}" if rng.random() < 0.3 else f"{month} {y}"
    return str(y) if kind == 17 else f"{m}/{d}/{y % 100:02d}"  # a year alone ("s/p CABG 1998"); a note's short year


def _ordinal(d):
    return "th" if 10 <= d % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(d % 10, "th")


def date_of_birth(rng, fake, held_out=False):
    return _format_date(rng, rng.randint(1935, 2010), rng.randint(1, 12), rng.randint(1, 28), held_out)


def date(rng, fake, held_out=False):
    return _format_date(rng, rng.randint(1995, 2030), rng.randint(1, 12), rng.randint(1, 28), held_out)


_UNITS = ("Apt {n}", "Apt. {n}", "Suite {n}", "Unit {n}", "#{n}", "Fl {n}", "Rm {n}")


def street_address(rng, fake, held_out=False):
    street = fake.street_address()
    if held_out:  # a unit first, a PO box, a rural route
        return rng.choice((f"Unit {rng.randint(1, 40)}, {street}, {fake.city()}",
                           f"PO Box {rng.randint(10, 9999)}, {fake.city()}, {fake.state_abbr()} {fake.zipcode()}",
                           f"RR {rng.randint(1, 9)} Box {rng.randint(10, 999)}, {fake.city()} {fake.state_abbr()}"))
    if rng.random() < 0.3 and not re.search(r"(Apt|Suite)", street):
        street = f"{street} {rng.choice(_UNITS).format(n=rng.randint(1, 40) if rng.random() < 0.7 else rng.choice('ABCD'))}"
    kind = rng.random()
    if kind < 0.3:
        return street
    if kind < 0.6:
        return f"{street}, {fake.city()}, {fake.state_abbr()} {fake.zipcode()}"
    if kind < 0.68:
        return f"{street}, {fake.city()}, {fake.state_abbr()}"  # no postcode
    if kind < 0.78:
        return f"{street}\n{fake.city()}, {fake.state_abbr()} {fake.zipcode()}"
    if kind < 0.86:
        return f"{street}, {fake.city()} {fake.zipcode()}-{_digits(rng, 4)}"  # ZIP+4
    if kind < 0.94:
        return f"{rng.randint(1, 250)} {rng.choice(['High Street', 'Station Road', 'Church Lane', 'Mill Road'])}, " \
               f"{rng.choice(['Leeds', 'Bristol', 'York', 'Bath', 'Oxford'])} {rng.choice(UPPER)}{rng.choice(UPPER)}" \
               f"{rng.randint(1, 20)} {rng.randint(1, 9)}{rng.choice(UPPER)}{rng.choice(UPPER)}"
    return f"{fake.street_address()} {fake.secondary_address()}"


def ip_address(rng, fake, held_out=False):
    if held_out:  # compressed and IPv4-mapped IPv6 forms
        return rng.choice((f"::ffff:{rng.randint(1, 223)}.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}",
                           f"fd{_chars(rng, HEX, 2)}::{_chars(rng, HEX, 4)}"))
    kind = rng.random()
    if kind < 0.6:
        first = rng.choice([rng.randint(1, 223), 10, 172, 192])
        return f"{first}.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}"
    groups = [f"{rng.randint(0, 0xFFFF):x}" for _ in range(8)]
    if kind < 0.8:
        return ":".join(groups)
    return f"{rng.choice(['2001:db8', 'fe80', '2a02:6b8', '2607:f8b0'])}::{groups[6]}:{groups[7]}"


# ------------------------------------------------------------------------------------------------- tier 3

def username(rng, fake, held_out=False):
    kind = rng.random()
    base = fake.user_name()
    if kind < 0.4:
        return base
    if kind < 0.6:
        return f"{base}{rng.randint(1, 9999)}"
    if kind < 0.8:
        return f"{fake.first_name().lower()}_{fake.last_name().lower()}"
    return f"{rng.choice(['the', 'real', 'xX', 'dark', 'its'])}{fake.last_name()}{rng.randint(0, 99)}"


# Places as news, encyclopedias and filings name them, beyond cities, states and countries: regions and continents,
# abbreviations, counties, rivers, lakes and mountains. An article before a name stays outside its span, as the
# human-labelled corpora mark it ("the Sahara" is LOCATION "Sahara").
_REGIONS = ("Europe", "Asia", "Africa", "North America", "South America", "Latin America", "Middle East",
            "Southeast Asia", "Midwest", "New England", "Scandinavia", "Balkans", "Caribbean", "Siberia",
            "Pacific Northwest", "Central Asia", "Gulf Coast", "Patagonia", "Sahara", "West Africa")
_PLACE_ABBREVIATIONS = ("U.S.", "US", "USA", "UK", "U.K.", "N.Y.", "Calif.", "Fla.", "Mass.", "D.C.", "NYC", "L.A.")


def location(rng, fake, held_out=False):
    kind = rng.random()
    if kind < 0.55:
        return rng.choice([fake.city(), fake.city(), fake.state(), fake.country(),
                           rng.choice(["London", "Paris", "Berlin", "Toronto", "Sydney", "Mumbai", "Lagos", "Chicago",
                                       "São Paulo", "Mexico City", "Seoul", "Dublin", "Nairobi", "Osaka"])])
    if kind < 0.7:
        return rng.choice(_REGIONS)
    if kind < 0.8:
        return rng.choice(_PLACE_ABBREVIATIONS + (fake.state_abbr(),))
    surname = fake.last_name()
    return rng.choice((f"{surname} County", f"Lake {surname}", f"Mount {surname}", f"{surname} River",
                       f"{fake.city()} Bay", f"Port {surname}", f"{surname} Valley", f"North {fake.city()}"))


# Organizations as people name them in informal text: brands, banks, carriers, health systems.
_BRANDS = ("Walmart", "Verizon", "Comcast", "Starbucks", "Amazon", "Google", "Delta", "Chase", "Wells Fargo",
           "Kaiser Permanente", "Target", "Costco", "Uber", "Netflix", "FedEx", "UPS", "Microsoft", "Tesla",
           "Barclays", "HSBC", "NHS", "Tesco", "T-Mobile", "AT&T", "Bank of America", "Spotify", "DoorDash",
           "Blue Cross", "Aetna", "McDonald's", "Home Depot", "IKEA", "Lufthansa", "Vodafone", "Santander")


# Organizations of news and filings: agencies and bodies (often as acronyms), universities, teams, newspapers, firms.
_BODIES = ("United Nations", "NATO", "FBI", "European Union", "EU", "NASA", "World Bank", "UNICEF",
           "Red Cross", "Senate", "Congress", "Supreme Court", "Federal Reserve", "IMF", "BBC",
           "CNN", "Reuters", "Securities and Exchange Commission", "IRS", "Pentagon", "Interpol", "WHO",
           "Greenpeace", "Department of Justice", "Harvard", "Oxford University", "IBM", "Sony")
_TEAM_NAMES = ("Eagles", "Tigers", "Rovers", "United", "Giants", "Wanderers", "Hawks", "Rangers", "City", "Lions")


def organization(rng, fake, held_out=False):
    kind = rng.random()
    if kind < 0.5:
        return rng.choice([fake.company(), fake.company(), rng.choice(_BRANDS),
                           f"{fake.last_name()} {rng.choice(['Bank', 'Hospital', 'University', 'Clinic', 'Credit Union', 'Labs'])}",
                           f"{fake.city()} {rng.choice(['Medical Center', 'School District', 'Savings Bank', 'Police Department'])}"])
    if kind < 0.65:
        return rng.choice(_BODIES)
    place, surname = rng.choice((fake.city(), fake.state())), fake.last_name()
    return rng.choice((f"University of {place}", f"{place} State University", f"{surname} College",
                       f"{fake.city()} {rng.choice(_TEAM_NAMES)}", f"{fake.city()} {rng.choice(['Times', 'Herald', 'Post', 'Tribune', 'Gazette'])}",
                       f"{surname} & {fake.last_name()} {rng.choice(['LLP', 'LLC', 'Inc.', 'Ltd', 'Partners'])}",
                       f"{place} Department of {rng.choice(['Transportation', 'Health', 'Revenue', 'Education'])}",
                       f"Ministry of {rng.choice(['Defence', 'Finance', 'Health', 'Foreign Affairs'])}",
                       f"{surname} {rng.choice(['Capital', 'Holdings', 'Group', 'Energy', 'Pharmaceuticals'])} {rng.choice(['Inc.', 'Corp.', 'plc', 'LLC', 'AG'])}"))


# Names running text writes after "the" ("a nurse at the University of Ohio", "fined by the EU", "along the Miller
# River"); the article stays outside the span. The renderer writes it where the words before the slot ask for one.
_WITH_ARTICLE = frozenset(("NHS", "United Nations", "FBI", "European Union", "EU", "World Bank", "Red Cross", "Senate",
                           "Supreme Court", "Federal Reserve", "IMF", "BBC", "IRS", "Pentagon", "WHO",
                           "Department of Justice", "Securities and Exchange Commission", "Middle East", "Midwest",
                           "Balkans", "Caribbean", "Sahara", "Pacific Northwest", "Gulf Coast", "U.S.", "US", "USA",
                           "UK", "U.K."))
_WITH_ARTICLE_SHAPE = re.compile(r"^(University|Ministry|Department) of |( Department of .+| (Times|Herald|Post|Tribune|"
                                 r"Gazette|River|Valley|Bay|Medical Center|School District|Police Department))$")


def takes_article(label, value):
    """Whether running text writes "the" before this LOCATION or ORGANIZATION value."""
    return label in ("LOCATION", "ORGANIZATION") and (value in _WITH_ARTICLE or bool(_WITH_ARTICLE_SHAPE.search(value)))


def url(rng, fake, held_out=False):
    kind = rng.random()
    if kind < 0.4:
        return fake.url()
    host = rng.choice(["www.", ""]) + fake.domain_name()
    if kind < 0.8:
        return f"https://{host}/{fake.uri_path()}"
    if kind < 0.9:
        return f"https://{rng.choice(['linkedin.com/in', 'github.com', 'twitter.com', 'facebook.com'])}/{fake.user_name()}"
    return f"http://{host}/{fake.uri_path()}?id={rng.randint(1, 99999)}"


def license_plate(rng, fake, held_out=False):
    kind = rng.randrange(6)
    if kind == 0:
        return f"{rng.randint(1, 9)}{_chars(rng, UPPER, 3)}{_digits(rng, 3)}"  # CA
    if kind == 1:
        return f"{_chars(rng, UPPER, 3)}-{_digits(rng, 4)}"  # NY
    if kind == 2:
        return f"{_chars(rng, UPPER, 3)} {_digits(rng, 3)}"
    if kind == 3:
        return f"{_chars(rng, UPPER, 2)}{_digits(rng, 2)} {_chars(rng, UPPER, 3)}"  # UK
    if kind == 4:
        return f"{_chars(rng, UPPER, 2)}-{_chars(rng, UPPER, 2)}-{_digits(rng, 3)}"
    return f"{_digits(rng, 3)} {_chars(rng, UPPER, 3)}"


def age(rng, fake, held_out=False):
    return str(rng.choice([rng.randint(18, 90), rng.randint(1, 17), rng.randint(20, 65)]))


NATIONALITIES = ("American", "Canadian", "Mexican", "Brazilian", "Argentinian", "British", "Irish", "French",
                 "German", "Italian", "Spanish", "Portuguese", "Dutch", "Polish", "Ukrainian", "Russian", "Turkish",
                 "Egyptian", "Nigerian", "Kenyan", "Ghanaian", "South African", "Indian", "Pakistani",
                 "Bangladeshi", "Chinese", "Japanese", "Korean", "Vietnamese", "Filipino", "Indonesian",
                 "Australian", "New Zealander", "Swedish", "Norwegian", "Greek", "Iranian", "Iraqi", "Syrian",
                 "Colombian", "Peruvian", "Cuban", "Jamaican", "Haitian", "Ethiopian", "Somali", "Moroccan")


def nationality(rng, fake, held_out=False):
    return rng.choice(NATIONALITIES)


def gender(rng, fake, held_out=False):
    return rng.choice(("male", "female", "Male", "Female", "non-binary", "woman", "man", "transgender woman",
                       "transgender man", "genderqueer", "F", "M", "agender", "trans man", "cisgender woman"))


def religion(rng, fake, held_out=False):
    return rng.choice(("Christian", "Catholic", "Roman Catholic", "Muslim", "Jewish", "Hindu", "Buddhist", "Sikh",
                       "atheist", "agnostic", "Mormon", "Protestant", "Eastern Orthodox", "Jehovah's Witness",
                       "Baptist", "Methodist", "Evangelical Christian", "Shia Muslim", "Sunni Muslim", "Jain",
                       "Bahá'í", "Quaker", "Lutheran"))


def marital_status(rng, fake, held_out=False):
    return rng.choice(("single", "married", "divorced", "widowed", "separated", "engaged", "in a civil partnership",
                       "in a domestic partnership", "Married", "Single", "Divorced", "remarried", "widower"))


# ------------------------------------------------------------------------------------------------- tier 4

def medical_record(rng, fake, held_out=False):
    kind = rng.randrange(5)
    if kind == 0:
        return _digits(rng, rng.randint(7, 10))
    if kind == 1:
        return f"MRN-{_digits(rng, 7)}"
    if kind == 2:
        return f"MR{_digits(rng, 6)}"
    if kind == 3:
        return f"{_chars(rng, UPPER, 3)}-{rng.randint(2005, 2026)}-{_digits(rng, 6)}"
    return f"{_digits(rng, 3)}-{_digits(rng, 2)}-{_digits(rng, 4)}-{rng.choice(UPPER)}"


def employee_id(rng, fake, held_out=False):
    return rng.choice((f"E{_digits(rng, 5)}", f"EMP-{_digits(rng, 5)}", f"EMP{_digits(rng, 6)}", _digits(rng, 6),
                       f"{_chars(rng, UPPER, 2)}{_digits(rng, 4)}", f"W{_digits(rng, 7)}", f"{rng.randint(10, 99)}-{_digits(rng, 4)}"))


def student_id(rng, fake, held_out=False):
    return rng.choice((f"S{_digits(rng, 8)}", f"STU-{rng.randint(2015, 2026)}-{_digits(rng, 4)}", f"9{_digits(rng, 8)}",
                       f"A{_digits(rng, 8)}", f"U{_digits(rng, 7)}", f"{rng.randint(2015, 2026)}{_digits(rng, 5)}"))


def account_number(rng, fake, held_out=False):
    return rng.choice((f"ACCT-{_digits(rng, 8)}", f"CUST-{_digits(rng, 6)}", f"{_digits(rng, 4)}-{_digits(rng, 6)}",
                       f"C{_digits(rng, 9)}", f"AC{_digits(rng, 10)}", _digits(rng, rng.randint(6, 10)),
                       f"{_chars(rng, UPPER, 3)}{_digits(rng, 7)}"))


def pin(rng, fake, held_out=False):
    return _digits(rng, rng.choice((4, 4, 4, 5, 6)))


_PASSWORD_WORDS = ("sunshine", "dragon", "monkey", "winter", "summer", "tiger", "falcon", "coffee", "maple",
                   "river", "rocket", "purple", "shadow", "silver", "hunter", "orange")


def password(rng, fake, held_out=False):
    kind = rng.random()
    if kind < 0.45:
        return fake.password(length=rng.randint(8, 16))
    if kind < 0.8:
        word = rng.choice(_PASSWORD_WORDS)
        word = word.capitalize() if rng.random() < 0.6 else word
        return f"{word}{rng.randint(1, 2026)}{rng.choice('!@#$%&*?')}"
    return _chars(rng, string.ascii_letters + DIGITS + "!@#$%^&*-_", rng.randint(10, 20))


def biometric(rng, fake, held_out=False):
    kind = rng.randrange(4)
    if kind == 0:
        return f"{rng.choice(['FP', 'IRIS', 'FACE', 'VOICE', 'RET'])}-{_chars(rng, HEX.upper(), 8)}"
    if kind == 1:
        return _chars(rng, HEX, 32)
    if kind == 2:
        return f"BIO-{_digits(rng, 4)}-{_chars(rng, ALNUM_UPPER, 6)}"
    return f"{rng.choice(['fingerprint', 'retina', 'face'])}_template_{_chars(rng, HEX, 12)}"


def vehicle_id(rng, fake, held_out=False):
    body = [rng.choice(VIN_ALPHABET) for _ in range(17)]
    body[8] = "0"
    vin = "".join(body)
    return vin[:8] + vin_check_digit(vin) + vin[9:]


def device_id(rng, fake, held_out=False):
    kind = rng.randrange(6)
    if kind == 0:
        sep = rng.choice([":", "-"])
        mac = sep.join(_chars(rng, HEX, 2) for _ in range(6))
        return mac.upper() if rng.random() < 0.5 else mac
    if kind == 1:
        payload = _digits(rng, 14)
        return payload + luhn_check_digit(payload)  # IMEI
    if kind == 2:
        return f"{_chars(rng, HEX, 8)}-{_chars(rng, HEX, 4)}-4{_chars(rng, HEX, 3)}-{rng.choice('89ab')}{_chars(rng, HEX, 3)}-{_chars(rng, HEX, 12)}"
    if kind == 3:
        return _chars(rng, HEX, 16)  # Android ID
    if kind == 4:
        return f"SN-{_chars(rng, ALNUM_UPPER, 10)}"
    return f"{_chars(rng, UPPER, 1)}{_chars(rng, ALNUM_UPPER, 11)}"  # Apple-style serial


def crypto_wallet(rng, fake, held_out=False):
    kind = rng.randrange(4)
    if kind == 0:
        return "0x" + _chars(rng, HEX, 40)
    if kind == 1:
        return "bc1q" + _chars(rng, BECH32, 38)
    if kind == 2:
        return rng.choice("13") + _chars(rng, BASE58, rng.randint(25, 33))
    return "0x" + "".join(c.upper() if rng.random() < 0.5 else c for c in _chars(rng, HEX, 40))


# country -> list of (alphabet, length) blocks of the BBAN
_IBAN_FORMATS = {
    "DE": ((DIGITS, 18),),
    "GB": ((UPPER, 4), (DIGITS, 14)),
    "FR": ((DIGITS, 10), (ALNUM_UPPER, 11), (DIGITS, 2)),
    "ES": ((DIGITS, 20),),
    "IT": ((UPPER, 1), (DIGITS, 10), (ALNUM_UPPER, 12)),
    "NL": ((UPPER, 4), (DIGITS, 10)),
    "BE": ((DIGITS, 12),),
    "CH": ((DIGITS, 5), (ALNUM_UPPER, 12)),
    "IE": ((UPPER, 4), (DIGITS, 14)),
    "PL": ((DIGITS, 24),),
}


def iban(rng, fake, held_out=False):
    country = rng.choice(tuple(_IBAN_FORMATS))
    bban = "".join(_chars(rng, alphabet, n) for alphabet, n in _IBAN_FORMATS[country])
    compact = country + iban_check_digits(country, bban) + bban
    groups = [compact[i:i + 4] for i in range(0, len(compact), 4)]
    if held_out:
        return rng.choice(("-".join(groups), " ".join(groups).lower()))
    if rng.random() < 0.55:
        return " ".join(groups)
    return compact


def swift_code(rng, fake, held_out=False):
    bank = _chars(rng, UPPER, 4)
    country = rng.choice(("US", "GB", "DE", "FR", "CH", "JP", "CA", "AU", "NL", "IT", "ES", "SG"))
    loc = rng.choice(UPPER + "2") + rng.choice(ALNUM_UPPER)
    branch = rng.choice(("", "", "XXX", _chars(rng, ALNUM_UPPER, 3)))
    return bank + country + loc + branch


def insurance_number(rng, fake, held_out=False):
    kind = rng.randrange(5)
    if kind == 0:  # Medicare beneficiary identifier shape
        letters = "ACDEFGHJKMNPQRTUVWXY"
        return f"{rng.randint(1, 9)}{rng.choice(letters)}{rng.choice(letters + DIGITS)}{rng.randint(0, 9)}-" \
               f"{rng.choice(letters)}{rng.choice(letters + DIGITS)}{rng.randint(0, 9)}-" \
               f"{rng.choice(letters)}{rng.choice(letters)}{_digits(rng, 2)}"
    if kind == 1:
        return f"{_chars(rng, UPPER, 3)}{_digits(rng, 9)}"
    if kind == 2:
        return f"POL-{_digits(rng, 4)}-{_digits(rng, 6)}"
    if kind == 3:
        return f"{_chars(rng, UPPER, 2)} {_digits(rng, 2)} {_digits(rng, 2)} {_digits(rng, 2)} {rng.choice('ABCD')}"  # UK NI
    return f"H{_digits(rng, 10)}"


def salary(rng, fake, held_out=False):
    amount = rng.randrange(28, 260) * 1000 + rng.choice((0, 0, 500, 250))
    kind = rng.randrange(7)
    if kind == 0:
        return f"${amount:,}"
    if kind == 1:
        return f"${amount // 1000}k"
    if kind == 2:
        return f"{amount:,} USD"
    if kind == 3:
        return f"£{amount:,}"
    if kind == 4:
        return f"${rng.randint(15, 95)}.{rng.choice(['00', '50', '25', '75'])}/hour"
    if kind == 5:
        return f"€{amount:,}".replace(",", ".")
    return f"${amount // 12:,} per month"


_CRIMES = ("burglary", "grand theft auto", "assault", "fraud", "drug possession", "shoplifting", "embezzlement",
           "arson", "vandalism", "identity theft", "domestic battery", "tax evasion", "robbery")


def criminal_record(rng, fake, held_out=False):
    crime = rng.choice(_CRIMES)
    return rng.choice((f"felony conviction for {crime}", f"misdemeanor {crime} charge", f"convicted of {crime}",
                       f"DUI conviction in {rng.randint(1995, 2024)}", f"{crime} conviction",
                       f"arrested for {crime} in {rng.randint(1995, 2024)}", f"served {rng.randint(1, 9)} years for {crime}",
                       f"on probation for {crime}"))


def political_affiliation(rng, fake, held_out=False):
    return rng.choice(("Democrat", "Republican", "Libertarian", "Green Party member", "Democratic Party",
                       "Republican Party", "conservative", "progressive", "socialist", "Labour Party supporter",
                       "Tory", "independent voter", "Democratic Socialist", "MAGA Republican", "liberal"))


def sexual_orientation(rng, fake, held_out=False):
    return rng.choice(("gay", "lesbian", "bisexual", "heterosexual", "straight", "asexual", "pansexual", "queer",
                       "homosexual", "bi"))


def health_condition(rng, fake, held_out=False):
    return rng.choice(("type 2 diabetes", "diabetes", "asthma", "HIV", "HIV-positive", "depression", "hypertension",
                       "epilepsy", "breast cancer", "bipolar disorder", "Crohn's disease", "multiple sclerosis",
                       "generalized anxiety disorder", "COPD", "schizophrenia", "hepatitis C", "PTSD",
                       "early-onset Alzheimer's", "celiac disease", "ADHD", "chronic kidney disease", "leukemia"))


# ------------------------------------------------------------------------------------------------ helpers

def _vary_case(rng, value, p):
    r = rng.random()
    if r < p / 2:
        return value.lower()
    if r < p:
        return value.upper()
    return value


GENERATORS = {
    "SSN": ssn, "CREDIT_CARD": credit_card, "BANK_ACCOUNT": bank_account, "PASSPORT_NUMBER": passport_number,
    "DRIVERS_LICENSE": drivers_license, "TAX_ID": tax_id,
    "PERSON": person, "EMAIL": email, "PHONE": phone, "DATE_OF_BIRTH": date_of_birth,
    "STREET_ADDRESS": street_address, "IP_ADDRESS": ip_address,
    "USERNAME": username, "DATE": date, "LOCATION": location, "ORGANIZATION": organization, "URL": url,
    "LICENSE_PLATE": license_plate, "AGE": age, "NATIONALITY": nationality, "GENDER": gender,
    "RELIGION": religion, "MARITAL_STATUS": marital_status,
    "MEDICAL_RECORD": medical_record, "EMPLOYEE_ID": employee_id, "STUDENT_ID": student_id,
    "ACCOUNT_NUMBER": account_number, "PIN": pin, "PASSWORD": password, "BIOMETRIC": biometric,
    "VEHICLE_ID": vehicle_id, "DEVICE_ID": device_id, "CRYPTO_WALLET": crypto_wallet, "IBAN": iban,
    "SWIFT_CODE": swift_code, "INSURANCE_NUMBER": insurance_number, "SALARY": salary,
    "CRIMINAL_RECORD": criminal_record, "POLITICAL_AFFILIATION": political_affiliation,
    "SEXUAL_ORIENTATION": sexual_orientation, "HEALTH_CONDITION": health_condition,
}


# Names given together are separate mentions, as the human-labelled corpora mark them: a place with the state or
# country it lies in ("Paxton, Illinois" is two places) and lists of people, places or organizations ("Rao and
# Scott", "Lewis, Simons, & Fennig"); the separators stay outside every span.
COORDINATED = ("PERSON", "LOCATION", "ORGANIZATION")
_CITY_COUNTRIES = (("London", "England"), ("Manchester", "England"), ("Paris", "France"), ("Lyon", "France"),
                   ("Toronto", "Ontario"), ("Kingston", "Ontario"), ("Sydney", "Australia"), ("Perth", "Australia"),
                   ("Mumbai", "India"), ("Lagos", "Nigeria"), ("Madrid", "Spain"), ("Porto", "Portugal"),
                   ("Osaka", "Japan"), ("Nairobi", "Kenya"), ("Cork", "Ireland"), ("Beijing", "China"))
_AP_STATES = ("Calif.", "Ill.", "Va.", "Fla.", "Mass.", "Pa.", "Ga.", "Mich.", "Ohio", "Texas", "Wash.", "N.Y.", "Md.")
_LIST_ENDS = (" and ", " and ", ", and ", " & ", ", & ", " or ")


def coordinated(label, rng, fake):
    """Several names of `label` in one mention, as pieces: names at even indices, separators between them."""
    if label == "LOCATION" and rng.random() < 0.6:
        if rng.random() < 0.25:
            city, country = rng.choice(_CITY_COUNTRIES)
            return [city, ", ", country]
        state = rng.choice([fake.state(), fake.state(), rng.choice(_AP_STATES), fake.state_abbr()])
        return [fake.city(), ", ", state]
    names = [GENERATORS[label](rng, fake) for _ in range(rng.choice((2, 2, 2, 3)))]
    pieces = [names[0]]
    for i, name in enumerate(names[1:], 2):
        pieces += [rng.choice(_LIST_ENDS) if i == len(names) else ", ", name]
    return pieces


# --------------------------------------------------------------------------- look-alikes that are not PII

def _negative_order(rng, fake, held_out=False):
    return rng.choice((f"ORD-{rng.randint(2019, 2026)}-{_digits(rng, 6)}", f"#{_digits(rng, 7)}",
                       f"PO{_digits(rng, 8)}", f"{_digits(rng, 3)}-{_digits(rng, 7)}-{_digits(rng, 7)}"))


def _negative_version(rng, fake, held_out=False):
    return rng.choice((f"v{rng.randint(0, 12)}.{rng.randint(0, 40)}.{rng.randint(0, 99)}",
                       f"{rng.randint(1, 5)}.{rng.randint(0, 20)}.{rng.randint(0, 9)}-rc{rng.randint(1, 4)}",
                       f"build {rng.randint(1000, 99999)}", f"{rng.randint(1, 30)}.{rng.randint(0, 9)}"))


def _negative_timestamp(rng, fake, held_out=False):
    return rng.choice((f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}",
                       f"{rng.randint(1600000000, 1800000000)}", f"{rng.randint(1600000000000, 1800000000000)}",
                       f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}.{_digits(rng, 3)}",
                       f"+{rng.randint(0, 99)}ms"))


def _negative_product(rng, fake, held_out=False):
    return rng.choice((f"SKU-{_digits(rng, 4)}-{_chars(rng, UPPER, 3)}", f"{_chars(rng, UPPER, 2)}-{_digits(rng, 4)}",
                       f"model {_chars(rng, UPPER, 2)}{_digits(rng, 3)}", f"part no. {_digits(rng, 5)}-{_digits(rng, 3)}",
                       f"ISBN 978-{rng.randint(0, 1)}-{_digits(rng, 3)}-{_digits(rng, 5)}-{rng.randint(0, 9)}"))


def _negative_tracking(rng, fake, held_out=False):
    return rng.choice((f"1Z{_chars(rng, ALNUM_UPPER, 6)}{_digits(rng, 10)}", f"9400{_digits(rng, 18)}",
                       f"{_digits(rng, 12)}", f"{_chars(rng, UPPER, 2)}{_digits(rng, 9)}US"))


def _negative_misc(rng, fake, held_out=False):
    return rng.choice((f"0x{_chars(rng, HEX, 8)}", f"{_chars(rng, HEX, 7)}", f"{rng.choice(['JIRA', 'OPS', 'BUG'])}-{rng.randint(10, 9999)}",
                       f"${rng.randint(1, 999)}.{_digits(rng, 2)}", f"{rng.randint(1, 400)} {rng.choice(['mg', 'ml', 'kg', 'GB', 'MB'])}",
                       f"room {rng.randint(100, 999)}", f"port {rng.randint(1024, 65535)}", f"HTTP {rng.choice([200, 301, 404, 500, 503])}",
                       f"flight {rng.choice(['UA', 'BA', 'DL', 'LH'])} {rng.randint(10, 9999)}", f"{rng.randint(1, 99)}%"))


# Form names, code systems and department abbreviations that sit next to PII in paperwork and are not PII.
_FORM_CODES = ("W-2", "W-4", "W-8BEN", "1099-NEC", "1099-MISC", "I-9", "DS-11", "SF-86", "SSA-89", "CMS-1500",
               "UB-04", "CPT", "HL7", "HIPAA", "ICD-10", "ICD-10-CM", "SNOMED CT", "DSM-5", "LOINC", "SOC 2", "HR",
               "IT", "PTO", "KYC", "AML", "NDA", "MSA", "Form 8821")


def _negative_code(rng, fake, held_out=False):
    return rng.choice(_FORM_CODES)


def _negative_count(rng, fake, held_out=False):
    """A small count (children, attempts, quantity) that must not read as an age or a PIN."""
    return str(rng.choice((rng.randint(0, 5), rng.randint(0, 12))))


# Clinical shorthand, ward codes, orders, drugs, lines and devices that sit next to PII in notes: not names, places
# or conditions. Notes capitalise drug and device names ("Foley", "Heparin") and write whole notes in capitals, which
# an uncased model reads as it reads a surname.
_CLINICAL = ("PRN", "SICU", "MICU", "NICU", "CCU", "PACU", "ED", "OR", "BID", "TID", "QID", "QHS", "PO", "IV",
             "NPO", "HPI", "PMH", "ROS", "A&O x3", "s/p", "c/o", "b/l", "WNL", "NAD", "CXR", "CBC", "BMP", "EKG", "MRI",
             "CT", "ABG", "DVT ppx", "tele", "4 West", "step-down", "L&D", "ortho", "cards", "neuro",
             "Foley", "Heparin gtt", "Lasix", "Propofol", "Fentanyl", "Versed", "Dopamine", "Levophed", "Neo",
             "Insulin gtt", "Vanco", "Zosyn", "Flagyl", "Coumadin", "Lopressor", "Captopril", "Digoxin", "Ativan",
             "Haldol", "Morphine", "Dilaudid", "Tylenol", "Protonix", "Kcl", "Mag sulfate", "Albumin", "PRBC", "FFP",
             "Swan", "A-line", "art line", "PICC", "Hickman", "Cordis", "TLC", "NGT", "OGT", "ETT", "PEG", "JP drain",
             "chest tube", "Trach", "CPAP", "BiPAP", "vent", "IABP", "pacer", "Carevue", "MAE", "PERRL", "afebrile",
             "LS clear", "coarse BS", "+BS", "NSR", "SR", "AFib", "PVCs", "MN", "DC'd", "OOB", "HOB", "I&O", "UO",
             "CVP", "PAD", "SVO2", "ICP", "GCS", "RASS", "sats", "O2 NC", "FiO2", "PEEP", "PS", "SBT", "extubated")


def _negative_clinical(rng, fake, held_out=False):
    return rng.choice(_CLINICAL)


def _negative_lab(rng, fake, held_out=False):
    """A lab value or a vital sign, ranges included: numbers that are no identifier."""
    return rng.choice((f"Na {rng.randint(128, 148)} (135-145)", f"WBC {rng.randint(3, 19)}.{rng.randint(0, 9)} K/uL",
                       f"Hgb {rng.randint(7, 17)}.{rng.randint(0, 9)}", f"BP {rng.randint(90, 180)}/{rng.randint(50, 110)}",
                       f"HR {rng.randint(50, 130)}", f"T {rng.randint(36, 40)}.{rng.randint(0, 9)}C",
                       f"SpO2 {rng.randint(85, 100)}% RA", f"Cr {rng.randint(0, 3)}.{rng.randint(0, 9)} (0.6-1.2)",
                       f"A1c {rng.randint(5, 12)}.{rng.randint(0, 9)}%", f"K {rng.randint(3, 5)}.{rng.randint(0, 9)}"))


def _negative_amount(rng, fake, held_out=False):
    whole = rng.randint(1, 99999)
    return rng.choice((f"{whole:,}.{_digits(rng, 2)}", f"${whole:,}.{_digits(rng, 2)}", f"{whole:,}",
                       f"USD {whole:,}.00", f"£{rng.randint(1, 999)}.{_digits(rng, 2)}"))


def _negative_hashtag(rng, fake, held_out=False):
    """A hashtag on a post (a topic, a slogan, an acronym, an event with its year or number): a tag, not a password,
    a plate or a status."""
    words = fake.words(rng.randint(1, 3))
    form = rng.randrange(5)
    if form == 0:
        body = "".join(w.capitalize() for w in words)
    elif form == 1:
        body = "".join(words)
    elif form == 2:
        body = _chars(rng, string.ascii_lowercase if rng.random() < 0.5 else UPPER, rng.randint(2, 5))
    elif form == 3:
        body = _chars(rng, UPPER, rng.randint(2, 3)) + str(rng.randint(1, 999))
    else:
        body = words[0].capitalize() + str(rng.randint(2000, 2030))
    return "#" + body


# Languages other than English whose Faker locale has its own word list: a post or a quote in another language is
# no PII by being unreadable to an English model.
_FOREIGN_LOCALES = ("ru_RU", "ar_AA", "nl_NL", "de_DE", "fr_FR", "es_ES", "el_GR", "ja_JP")
_FOREIGN_FAKERS = {}


def _negative_foreign(rng, fake, held_out=False):
    """A sentence of 3-12 words in another language, seeded from `rng`."""
    locale = rng.choice(_FOREIGN_LOCALES)
    if locale not in _FOREIGN_FAKERS:
        _FOREIGN_FAKERS[locale] = faker.Faker(locale)
    other = _FOREIGN_FAKERS[locale]
    other.seed_instance(rng.getrandbits(64))
    return other.sentence(nb_words=rng.randint(3, 12))


NEGATIVES = {
    "order": _negative_order, "version": _negative_version, "timestamp": _negative_timestamp,
    "product": _negative_product, "tracking": _negative_tracking, "misc": _negative_misc,
    "code": _negative_code, "count": _negative_count, "clinical": _negative_clinical, "lab": _negative_lab,
    "amount": _negative_amount, "hashtag": _negative_hashtag, "foreign": _negative_foreign,
}
