"""Surrogates: each keeps the format a reader relies on, is consistent under one key, and never equals the
original."""

import datetime
import re

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from piiner.deid.surrogates import SurrogateGenerator, iban_valid, luhn_check_digit, luhn_valid
from piiner.hub.pii_schema import PII_TYPES

KEY = b"test key"


@pytest.fixture(scope="module")
def gen():
    return SurrogateGenerator(KEY)


def shape(value):
    """The character-class skeleton: digits -> 9, letters -> a/A, the rest as is."""
    return re.sub(r"[a-z]", "a", re.sub(r"[A-Z]", "A", re.sub(r"\d", "9", value)))


def test_luhn_helpers_agree_with_known_numbers():
    assert luhn_valid("4111 1111 1111 1111") and luhn_valid("79927398713")
    assert not luhn_valid("4111 1111 1111 1112")
    assert luhn_check_digit("7992739871") == "3"
    assert iban_valid("DE89 3704 0044 0532 0130 00") and iban_valid("GB82WEST12345698765432")
    assert not iban_valid("DE88 3704 0044 0532 0130 00")


@pytest.mark.parametrize("value", ["123-45-6789", "123 45 6789", "123456789"])
def test_ssn_keeps_layout_and_has_an_issuable_area(gen, value):
    fake = gen(value, "SSN")
    assert shape(fake) == shape(value) and fake != value
    digits = re.sub(r"\D", "", fake)
    area, group, serial = int(digits[:3]), int(digits[3:5]), int(digits[5:])
    assert 1 <= area < 900 and area != 666 and group > 0 and serial > 0


@pytest.mark.parametrize("value", ["4111 1111 1111 1111", "5500-0000-0000-0004", "378282246310005", "6011000990139424"])
def test_card_is_luhn_valid_with_same_grouping_length_and_network(gen, value):
    fake = gen(value, "CREDIT_CARD")
    assert luhn_valid(fake) and shape(fake) == shape(value)
    # The first two digits name the network: an American Express number (34, 37) stays one, a Mastercard (51-55) too.
    assert fake[:2] == value[:2] and fake != value


@pytest.mark.parametrize("value", ["DE89 3704 0044 0532 0130 00", "GB82WEST12345698765432", "FR1420041010050500013M02606"])
def test_iban_is_mod97_valid_with_same_country_length_and_grouping(gen, value):
    fake = gen(value, "IBAN")
    assert iban_valid(fake) and fake[:2] == value[:2] and shape(fake) == shape(value) and fake != value


@pytest.mark.parametrize("value", ["(415) 555-0123", "+44 20 7946 0958", "415.555.0123", "+1-415-555-0123"])
def test_phone_keeps_separators_and_country_code(gen, value):
    fake = gen(value, "PHONE")
    assert shape(fake) == shape(value) and fake != value
    if value.startswith("+"):
        assert fake.split()[0].split("-")[0] == value.split()[0].split("-")[0]


@pytest.mark.parametrize("value", ["john.smith@example.com", "J.Smith42@mail.example.co.uk", "x@y.org"])
def test_email_keeps_shape(gen, value):
    fake = gen(value, "EMAIL")
    local, _, domain = fake.rpartition("@")
    orig_local, _, orig_domain = value.rpartition("@")
    assert local and domain and fake != value
    assert re.sub(r"[^.@_+-]", "", local) == re.sub(r"[^.@_+-]", "", orig_local)  # separators kept
    assert domain.split(".")[-1] == orig_domain.split(".")[-1]  # top-level domain kept
    assert re.search(r"\d\d", local) if "42" in value else True


@pytest.mark.parametrize("value", ["John Smith", "JOHN SMITH", "Dr. Jane Q. Doe", "Smith"])
def test_person_is_a_plausible_name_with_same_word_count_and_case(gen, value):
    fake = gen(value, "PERSON")
    assert len(fake.split()) == len(value.split()) and fake.casefold() != value.casefold()
    assert all(re.fullmatch(r"[A-Za-z.'-]+", w) for w in fake.split())
    if value.isupper():
        assert fake.isupper()
    if value.startswith("Dr. "):
        assert fake.startswith("Dr. ") and re.fullmatch(r"[A-Z]\.", fake.split()[2])


@pytest.mark.parametrize(
    "value, fmt",
    [("2021-03-05", "%Y-%m-%d"), ("12/31/1999", "%m/%d/%Y"), ("31.12.1999", "%d.%m.%Y"), ("March 05, 2021", "%B %d, %Y"),
     ("5 Sep 1989", "%d %b %Y")],
)
def test_date_keeps_format_and_is_a_real_date(gen, value, fmt):
    fake = gen(value, "DATE_OF_BIRTH")
    datetime.datetime.strptime(fake, fmt)  # raises if the format or the date is not kept
    assert fake != value


@pytest.mark.parametrize(
    "value, fmt",
    [("2021-03-05 14:30", "%Y-%m-%d %H:%M"), ("2021-03-05T14:30:59Z", "%Y-%m-%dT%H:%M:%SZ"),
     ("March 5, 2021 at 09:05 PM", "%B %d, %Y at %I:%M %p"), ("14:30:59", "%H:%M:%S")],
)
def test_date_with_time_keeps_both_formats(gen, value, fmt):
    fake = gen(value, "DATE")
    datetime.datetime.strptime(fake, fmt)
    assert fake != value


def test_ambiguous_numeric_date_stays_valid_in_both_readings(gen):
    for value in ["03/04/2021", "01/02/2003", "11/12/1990"]:
        fake = gen(value, "DATE")
        first, second, _ = map(int, fake.split("/"))
        assert first <= 12 and second <= 12


@pytest.mark.parametrize("value", ["AB-123-cd", "MRN 0048213", "é7", "ZX9"])
def test_generic_fallback_preserves_character_classes(gen, value):
    fake = gen(value, "LICENSE_PLATE")
    assert len(fake) == len(value) and fake != value
    for a, b in zip(value, fake):
        assert a.isdigit() == b.isdigit() and a.isupper() == b.isupper() and a.islower() == b.islower()
        if not a.isalnum():
            assert a == b


@pytest.mark.parametrize("value, pii_type", [("４１１１ １１１１ １１１１ １１１１", "CREDIT_CARD"), ("１２３-４５-６７８９", "SSN"),
                                             ("ｊｏｈｎ＠ｘ．ｃｏｍ", "EMAIL")])
def test_a_value_written_full_width_gets_the_surrogate_of_its_ascii_form(gen, value, pii_type):
    """Read as the detectors read it: a full-width card keeps its network and passes Luhn, and the same number
    written either way is one value (one surrogate)."""
    ascii_value = value.translate({c: c - 0xFEE0 for c in range(0xFF01, 0xFF5F)})
    assert gen(value, pii_type) == gen(ascii_value, pii_type) != ascii_value


def test_same_value_same_surrogate_under_one_key_and_different_under_another():
    a, b, other = SurrogateGenerator(KEY), SurrogateGenerator(KEY), SurrogateGenerator(b"another key")
    values = [("123-45-6789", "SSN"), ("John Smith", "PERSON"), ("a@b.com", "EMAIL")]
    assert [a(v, t) for v, t in values] == [b(v, t) for v, t in values]
    assert [a(v, t) for v, t in values] != [other(v, t) for v, t in values]


@pytest.mark.parametrize("pii_type", PII_TYPES)
def test_never_equal_to_the_original_even_for_one_character(gen, pii_type):
    for value in ["7", "a", "Z", "-", ".", " x", "é", "0", "female", "1999", "\x00", "\ud800"]:
        fake = gen(value, pii_type)
        assert fake.casefold() != value.casefold() and fake, (value, fake)


ARBITRARY_GEN = SurrogateGenerator(KEY)


@settings(max_examples=60, deadline=None)
@given(value=st.text(min_size=1, max_size=30), pii_type=st.sampled_from(PII_TYPES))
@example(value="1 ²", pii_type="DATE")  # a digit str.isdigit() accepts and int() does not (found by this test)
@example(value="\r", pii_type="PERSON")  # a name of no word (found by this test)
def test_never_equal_on_arbitrary_unicode(value, pii_type):
    fake = ARBITRARY_GEN(value, pii_type)
    assert isinstance(fake, str) and fake.casefold() != value.casefold()


def test_one_value_in_any_layout_or_case_gets_one_surrogate(gen):
    spaced, dashed = gen("4111 1111 1111 1111", "CREDIT_CARD"), gen("4111-1111-1111-1111", "CREDIT_CARD")
    assert spaced.replace(" ", "") == dashed.replace("-", "") and " " in spaced and "-" in dashed
    assert gen("John.Smith@Example.com", "EMAIL") == gen("john.smith@example.com", "EMAIL")
    assert gen("(212) 555-9916", "PHONE").translate(str.maketrans("", "", "() -")) == gen(
        "212.555.9916", "PHONE").replace(".", "")


def test_distinct_values_never_share_a_surrogate_and_none_is_a_value_of_the_same_text():
    from piiner.deid.redact import Redactor

    ages = [str(a) for a in range(30, 45)]
    text = " ".join(f"age {a}" for a in ages)

    def detector(texts):
        return [[{"type": "AGE", "tier": 3, "score": 1.0, "start": m.start(), "end": m.end()}
                 for m in re.finditer(r"\d+", t)] for t in texts]

    result = Redactor(detector, mode="surrogate", key=b"k").redact(text)
    fakes = [e["replacement"] for e in result.entities]
    assert len(set(fakes)) == len(ages), "two ages share a surrogate"
    assert not set(fakes) & set(ages), "a surrogate is another age of the same text"


@pytest.mark.parametrize("value, pii_type, valid", [
    ("612-40-8813", "SSN", "ssn"), ("4111 1111 1111 1111", "CREDIT_CARD", "luhn"),
    ("GB82 WEST 1234 5698 7654 32", "IBAN", "iban"), ("user2@example.com", "EMAIL", "email"),
    ("10.0.0.5", "IP_ADDRESS", "ip"), ("fe80::1ff:fe23:4567:890a", "IP_ADDRESS", "ip"),
    ("98:2a:7c:01:ff:10", "DEVICE_ID", "mac"), ("982A.7C01.FF10", "DEVICE_ID", "mac"),
    ("+44 20 7946 0958", "PHONE", "phone"), ("(212) 555-9916", "PHONE", "phone"),
])
def test_the_surrogate_of_a_valid_value_is_a_valid_value_of_the_same_type_and_layout(value, pii_type, valid):
    from piiner.hub.recognizers_piiner import VALIDATORS

    for key in (b"a", b"b", b"c", b"d", b"e"):
        fake = SurrogateGenerator(key)(value, pii_type)
        assert fake != value and VALIDATORS[valid](fake), (value, fake)
        assert [c.isdigit() or c.isalpha() for c in fake] == [c.isdigit() or c.isalpha() for c in value] or \
            pii_type in ("EMAIL", "IP_ADDRESS")


def test_a_base58_wallet_stays_in_its_alphabet(gen):
    fake = gen("1BoatSLRHtKNngkdXEeobR76b53LETtpyT", "CRYPTO_WALLET")
    assert len(fake) == 34 and fake[0] == "1" and not set(fake) & set("0OIl")


def test_one_person_named_in_full_in_parts_and_in_capitals_is_one_fake_person(gen):
    full = gen("John Smith", "PERSON")
    first, last = full.split()
    assert gen("John", "PERSON") == first and gen("Smith", "PERSON") == last
    assert gen("JOHN SMITH", "PERSON") == full.upper() and gen("Mr. Smith", "PERSON") == f"Mr. {last}"
    assert gen("Mary Smith", "PERSON").split()[1] == last and gen("Mary Smith", "PERSON") != full


@pytest.mark.parametrize("value", ["March 19th, 2021", "the 22nd", "19th", "1st Jan 2020"])
def test_an_ordinal_day_stays_an_ordinal_day(gen, value):
    fake = gen(value, "DATE")
    day = re.search(r"\b(\d{1,2})(st|nd|rd|th)\b", fake)
    assert day and not day.group(1).startswith("0") and fake != value
    n = int(day.group(1))
    assert day.group(2) == ("th" if 11 <= n <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th"))


def test_a_year_alone_stays_a_nearby_year(gen):
    for value in ("1992", "S/P MI 1992"):
        year = int(re.search(r"\d{4}", gen(value, "DATE")).group())
        assert year != 1992 and abs(year - 1992) <= 5


@pytest.mark.parametrize("value, prefix", [("+44 20 7946 0958", "+44 "), ("0049 30 1234567", "0049 "),
                                           ("+49 (0)30 123456", "+49 (0)"), ("020 7946 0958", "0")])
def test_international_and_trunk_prefixes_stay(gen, value, prefix):
    fake = gen(value, "PHONE")
    assert fake.startswith(prefix) and fake != value and len(fake) == len(value)


@pytest.mark.parametrize("pii_type, values, validator", [
    ("SSN", ["219-09-9999", "078 05 1120", "123456789"], "ssn"),
    ("CREDIT_CARD", ["4111 1111 1111 1111", "5500-0000-0000-0004", "378282246310005"], "luhn"),
    ("PHONE", ["(212) 555-0147", "212.555.0199", "+1 415 555 0132", "+44 20 7946 0958"], "phone"),
    ("EMAIL", ["john.smith@example.com", "a_b@corp.co.uk"], "email"),
    ("IP_ADDRESS", ["10.0.0.5", "2001:db8::1"], "ip"),
])
def test_surrogates_pass_the_validators_the_decode_uses(pii_type, values, validator):
    # A surrogate is read again by piiner (a redacted corpus trained on, a text scanned twice): it must be what the
    # project's one statement of the type's rules accepts.
    from piiner.hub.recognizers_piiner import VALIDATORS

    for seed in range(40):
        gen = SurrogateGenerator(f"key-{seed}".encode())
        for value in values:
            fake = gen(value, pii_type)
            assert VALIDATORS[validator](fake), (value, fake)
